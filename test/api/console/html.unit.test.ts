/** The console's template helper escapes every value unless it is markup this code wrote, and lets only http(s) and relative addresses into links. */
import { expect } from 'chai';
import { escapeHtml, html, raw, SafeHtml, safeUrl } from '../../../services/api/console/html';

describe('console html templates', () => {
  it('escapes every interpolated string, in text and in quoted attributes', () => {
    const title = `<script>alert(1)</script><img src=x onerror="alert(2)">'\`&`;
    const out = html`<h1 title="${title}">${title}</h1>`.text;
    expect(out).to.equal(
      '<h1 title="&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&#39;&#96;&amp;">' +
        '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&#39;&#96;&amp;</h1>',
    );
    expect(out).not.to.match(/<script|<img/);
  });

  it('writes markup it made itself, and markup wrapped in raw() on purpose, as it is', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}</p>`.text).to.equal('<p><b>&lt;i&gt;</b></p>');
    expect(html`<p>${raw('<br>')}</p>`.text).to.equal('<p><br></p>');
    expect(inner).to.be.instanceOf(SafeHtml);
    expect(String(inner)).to.equal('<b>&lt;i&gt;</b>');
  });

  it('joins lists, writes numbers, and writes nothing for null, undefined and false', () => {
    expect(html`<ul>${['<a>', html`<li>b</li>`, 3]}</ul>`.text).to.equal('<ul>&lt;a&gt;<li>b</li>3</ul>');
    expect(html`[${null}${undefined}${false}]`.text).to.equal('[]');
  });

  it('escapes the characters that end text or an attribute', () => {
    expect(escapeHtml(`&<>"'\``)).to.equal('&amp;&lt;&gt;&quot;&#39;&#96;');
  });

  it('lets http(s) and same-site paths into links and turns every other scheme into #', () => {
    expect(safeUrl('https://example.com/a?b=<c>')).to.equal('https://example.com/a?b=%3Cc%3E');
    expect(safeUrl('http://127.0.0.1:3000/cdn/x.png')).to.equal('http://127.0.0.1:3000/cdn/x.png');
    expect(safeUrl('/console/captures')).to.equal('/console/captures');
    for (const bad of [
      'javascript:alert(1)',
      ' JaVaScRiPt:alert(1)',
      'data:text/html,<script>',
      '//evil.example/x',
      '/\\evil.example',
      'vbscript:x',
      '',
      null,
    ]) {
      expect(safeUrl(bad), String(bad)).to.equal('#');
    }
  });
});
