/**
 * The value shapes and aliases the official clients send (docs/clients.md), read into the
 * option table's one shape: each form is checked against the value the capture receives,
 * and what stays outside the policy is still refused with a note.
 */
import { expect } from 'chai';
import { foldIndexedKeys } from '../../services/api/client-shapes';
import { validateShape } from '../../services/api/request-schemas';
import type { ConfigOptions, SnapOptions } from '../../services/shared/screenshot-options';
import { errorOf } from '../support/errors';

const URL = 'https://example.com';
const snap = (params: Record<string, unknown>) => validateShape<SnapOptions>('snap', { url: URL, ...params });

describe('client shapes: aliases', () => {
  it('reads proxy_server as real_location (n8n), and html as html_only', () => {
    expect(snap({ proxy_server: 'New York' })).to.deep.equal({ url: URL, real_location: 'New York' });
    expect(snap({ html: 'true' })).to.deep.equal({ url: URL, html_only: true });
    expect(validateShape<ConfigOptions>('configCreate', { url: URL, proxy_server: 'London' })).to.deep.equal({ url: URL, real_location: 'London' });
  });

  it('takes an option and its alias together when they agree, and refuses them when they differ', () => {
    expect(snap({ proxy_server: 'London', real_location: 'London' })).to.deep.equal({ url: URL, real_location: 'London' });
    const err = errorOf(() => snap({ real_location: 'London', proxy_server: 'Berlin' }));
    expect([err.type, err.code]).to.deep.equal(['invalid_parameter', 400]);
    expect(err.message).to.contain('real_location and proxy_server are the same option');
  });

  it('refuses an alias where its option is not taken, naming what was sent', () => {
    const err = errorOf(() => validateShape('configCreate', { url: URL, html: 'true' }));
    expect(err.message).to.contain('Unknown parameter "html"');
  });
});

describe('client shapes: 0 means "not set" where 0 could mean nothing else', () => {
  it('drops page_width, page_height, quality, thumb_width and thumb_height of 0 (the n8n node sends 0 for an empty field)', () => {
    const v = snap({ page_width: 0, page_height: '0', quality: 0, thumb_width: '0', thumb_height: 0 });
    expect(v).to.deep.equal({ url: URL });
  });

  it('keeps wait=0 and ttl=0 (no wait; always fresh)', () => {
    expect(snap({ wait: 0, ttl: '0' })).to.deep.include({ wait: 0, ttl: 0 });
  });

  it('still refuses what is out of range otherwise', () => {
    expect(errorOf(() => snap({ page_width: 50 })).message).to.contain('page_width: must be at least 100');
    expect(errorOf(() => snap({ quality: -1 })).message).to.contain('quality: must be at least 1');
  });
});

describe('client shapes: headers and cookies in every form the clients send', () => {
  it('the spec form, a map, and an array of maps (n8n 1.x sends one as JSON text in a JSON body)', () => {
    expect(snap({ headers: [{ key: 'X-A', value: '1' }] }).headers).to.deep.equal([{ key: 'X-A', value: '1' }]);
    expect(snap({ headers: { 'X-A': '1', 'X-B': 2 } }).headers).to.deep.equal([
      { key: 'X-A', value: '1' },
      { key: 'X-B', value: '2' },
    ]);
    expect(snap({ headers: '[{"key1": "value1", "key2": "value2"}]' }).headers).to.deep.equal([
      { key: 'key1', value: 'value1' },
      { key: 'key2', value: 'value2' },
    ]);
    expect(snap({ cookies: '[{"sid": "abc"}, {"theme": "dark"}]' }).cookies).to.deep.equal([
      { key: 'sid', value: 'abc' },
      { key: 'theme', value: 'dark' },
    ]);
  });

  it('"Name: value" lines, one string or one per item (n8n 0.1: headers[0]=X-Test: a b)', () => {
    expect(snap({ headers: 'X-Test: a b\nAccept-Language: fr' }).headers).to.deep.equal([
      { key: 'X-Test', value: 'a b' },
      { key: 'Accept-Language', value: 'fr' },
    ]);
    expect(snap({ headers: ['X-Test: a: b', 'X-Other:1'] }).headers).to.deep.equal([
      { key: 'X-Test', value: 'a: b' },
      { key: 'X-Other', value: '1' },
    ]);
    const err = errorOf(() => snap({ headers: ['no colon here'] }));
    expect(err.message).to.contain('headers: the line "no colon here" has no "Name: value"');
  });

  it('cookie strings: several cookies, or one with its Path, Domain, Secure and HttpOnly attributes', () => {
    expect(snap({ cookies: 'a=1; b=2' }).cookies).to.deep.equal([
      { key: 'a', value: '1' },
      { key: 'b', value: '2' },
    ]);
    expect(snap({ cookies: ['sid=abc; Path=/app; Domain=example.com; Secure; HttpOnly', 'x=y=z'] }).cookies).to.deep.equal([
      { key: 'sid', value: 'abc', path: '/app', domain: 'example.com', secure: true, httpOnly: true },
      { key: 'x', value: 'y=z' },
    ]);
  });

  it('refuses cookie attributes that would do nothing, and text that is no cookie', () => {
    expect(errorOf(() => snap({ cookies: 'sid=abc; Expires=Wed, 21 Oct 2026 07:28:00 GMT' })).message).to.contain('the attribute "Expires" is not taken');
    expect(errorOf(() => snap({ cookies: 'justaword' })).message).to.contain('"justaword" is not name=value');
    expect(errorOf(() => snap({ cookies: 'Path=/; a=1' })).message).to.contain('"Path" comes before any cookie');
    expect(errorOf(() => snap({ headers: '[{"key": "X-A"' })).message).to.contain('headers: the JSON could not be parsed');
  });

  it('refuses an item with a value and no key (CDP\'s {"name", "value"}), which read as a map sent headers "name" and "value"', () => {
    expect(errorOf(() => snap({ headers: '[{"name":"X-Api-Key","value":"secret"}]' })).message).to.contain(
      'headers: an item has "value" but no "key" (it has "name"): write each as {"key": "<name>", "value": "<value>"}',
    );
    expect(errorOf(() => snap({ cookies: [{ name: 'sid', value: 'abc' }] })).message).to.contain('cookies: an item has "value" but no "key"');
    expect(errorOf(() => snap({ cookies: [{ value: 'v' }] })).message).to.contain('cookies: an item has "value" but no "key":');
    // A map without "value" is still a map.
    expect(snap({ headers: { 'X-A': '1' } }).headers).to.deep.equal([{ key: 'X-A', value: '1' }]);
  });
});

describe('client shapes: multi_step_actions, booleans, numbers as text', () => {
  it('takes each step as its own JSON text (n8n 0.1: multi_step_actions[0]={...})', () => {
    const v = snap({ multi_step_actions: ['{"type":"click","selector":"#login"}', '{"type":"wait","value":"500"}'] });
    expect(v.multi_step_actions).to.deep.equal([
      { type: 'click', selector: '#login' },
      { type: 'wait', value: '500' },
    ]);
    expect(errorOf(() => snap({ multi_step_actions: ['{"type":'] })).message).to.contain('multi_step_actions[0]: must be one step as a JSON object');
  });

  it("keeps a change step's custom_id (the MCP server's), and refuses it on other steps", () => {
    const change = { type: 'change', selector: '#price', send_to: 'webhook', url: 'https://hooks.example.com/x', custom_id: 'price-1' };
    expect(snap({ multi_step_actions: [change] }).multi_step_actions).to.deep.equal([change]);
    const err = errorOf(() => snap({ multi_step_actions: [{ type: 'click', selector: '#a', custom_id: 'c' }] }));
    expect(err.message).to.contain('multi_step_actions[0] (click): unknown key "custom_id"');
  });

  it('reads True/False (the Python client), accuracy and scale_factor as text or numbers', () => {
    expect(snap({ json: 'True', fullpage: 'False', accuracy: '50', scale_factor: 2, latitude: '48.85', longitude: '2.35' })).to.deep.include({
      json: true,
      fullpage: false,
      accuracy: 50,
      scale_factor: 2,
      latitude: 48.85,
      longitude: 2.35,
    });
  });
});

describe('client shapes: indexed keys and PATCH without url', () => {
  it('folds name[N] keys into arrays in index order, and refuses a parameter sent both ways', () => {
    expect(foldIndexedKeys({ 'headers[1]': 'B: 2', url: URL, 'headers[0]': 'A: 1' })).to.deep.equal({ url: URL, headers: ['A: 1', 'B: 2'] });
    expect(errorOf(() => foldIndexedKeys({ headers: 'A: 1', 'headers[0]': 'B: 2' })).message).to.contain('headers: sent both as headers and as headers[N]');
  });

  it('takes a configuration change without url, and still requires url on create', () => {
    expect(validateShape('configUpdate', { wait: '10' })).to.deep.equal({ wait: 10 });
    expect(errorOf(() => validateShape('configCreate', { wait: '10' })).message).to.contain('url is required');
  });

  it('/snap_html takes html_content and no url', () => {
    expect(validateShape('snapHtml', { html_content: '<p>hi</p>', json: 'true' })).to.deep.equal({ html_content: '<p>hi</p>', json: true });
    expect(errorOf(() => validateShape('snapHtml', { html_content: '<p>hi</p>', url: URL })).message).to.contain(
      'url is not taken by /snap_html: it is an option of /snap',
    );
    expect(errorOf(() => validateShape('snapHtml', {})).message).to.contain('html_content is required');
    expect(errorOf(() => snap({ html_content: '<p>hi</p>' })).message).to.contain('html_content is not taken by /snap: it is an option of /snap_html');
  });
});
