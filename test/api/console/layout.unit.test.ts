/** The frame of every console page: its assets (no inline script or style), navigation, sign-out form, escaped text. */
import { expect } from 'chai';
import { ASSETS, SCRIPT, STYLESHEET } from '../../../services/api/console/assets';
import { html } from '../../../services/api/console/html';
import { bytesText, messagePage, page, timeOf } from '../../../services/api/console/layout';

describe('console layout', () => {
  it('links the hashed style sheet and script, with no inline script, style or handler', () => {
    const out = page({ title: 'T', body: html`<p>x</p>` });
    expect(out).to.contain(`<link rel="stylesheet" href="${STYLESHEET}">`).and.contain(`<script src="${SCRIPT}" defer></script>`);
    expect(out).not.to.match(/<script>|<style|style=|\son[a-z]+=/i);
    expect(Object.keys(ASSETS).map((n) => `/console/assets/${n}`)).to.have.members([STYLESHEET, SCRIPT]);
    expect(STYLESHEET).to.match(/^\/console\/assets\/console\.[0-9a-f]{12}\.css$/);
  });

  it('shows the navigation with the current page marked and a sign-out form carrying the token, when signed in', () => {
    const out = page({ title: 'T', session: { accountId: 'acct_1', csrf: 'tok"en' }, active: 'captures', body: html`` });
    expect(out).to.contain('<a href="/console/captures" aria-current="page">Captures</a>');
    expect(out).to.contain('<a href="/console">Overview</a>');
    expect(out).to.contain('<form class="inline" method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="tok&quot;en">');
    expect(page({ title: 'T', body: html`` })).not.to.contain('sign-out');
  });

  it('escapes the title and messages', () => {
    const out = messagePage('<b>t</b>', '<script>alert(1)</script>');
    expect(out).to.contain('<title>&lt;b&gt;t&lt;/b&gt; · snapservice console</title>').and.contain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(out).not.to.contain('<script>alert');
  });

  it('refreshes a page by <meta> when asked (a capture still running)', () => {
    expect(page({ title: 'T', refreshSeconds: 3, body: html`` })).to.contain('<meta http-equiv="refresh" content="3">');
  });

  it('writes times as UTC in <time> and bytes as a person reads them', () => {
    expect(timeOf(Date.UTC(2026, 10, 28, 9, 5, 7)).text).to.equal('<time datetime="2026-11-28T09:05:07.000Z" data-local>2026-11-28 09:05:07 UTC</time>');
    expect(timeOf(null).text).to.contain('—');
    expect([0, 1023, 1024, 1536, 10 * 1024 * 1024, 300 * 1024 ** 3].map(bytesText)).to.deep.equal([
      '0 B',
      '1023 B',
      '1.0 KiB',
      '1.5 KiB',
      '10.0 MiB',
      '300 GiB',
    ]);
  });
});
