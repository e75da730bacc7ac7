/** The gallery's query (page, size, configuration, UTC dates) as the lists' paging, its addresses, and its items escaped. */
import { expect } from 'chai';
import { configName, galleryHref, galleryItems, galleryQuery, PAGE_SIZE, pagingOf } from '../../../../services/api/console/pages/captures';
import type { ConfigView, ScreenshotRef } from '../../../../services/shared/contracts';

const DAY = 86_400_000;

describe('console gallery', () => {
  it('reads its query with defaults, and refuses a bad value with a note naming it', () => {
    expect(galleryQuery({})).to.deep.equal({ page: 1, limit: PAGE_SIZE, config: '', from: '', to: '' });
    expect(galleryQuery({ page: '3', limit: '10', config: 'abc123', from: '2026-11-01', to: ' 2026-11-28 ' })).to.deep.equal({
      page: 3,
      limit: 10,
      config: 'abc123',
      from: '2026-11-01',
      to: '2026-11-28',
    });
    for (const [q, field] of [
      [{ page: '0' }, 'page'],
      [{ page: 'x' }, 'page'],
      [{ page: ['1', '2'] }, 'page'],
      [{ limit: '101' }, 'limit'],
      [{ config: '<script>' }, 'config'],
    ] as const) {
      expect(() => galleryQuery(q as Record<string, unknown>), JSON.stringify(q)).to.throw(`${field}:`);
    }
  });

  it('pages the list with the from and to days both included (UTC), and refuses a bad or reversed date', () => {
    const nov1 = Date.UTC(2026, 10, 1);
    expect(pagingOf({ page: 2, limit: 24, config: '', from: '2026-11-01', to: '2026-11-03' })).to.deep.equal({
      page: 2,
      limit: 24,
      afterMs: nov1 - 1,
      beforeMs: nov1 + 3 * DAY,
      order: 'DESC',
    });
    expect(pagingOf({ page: 1, limit: 24, config: '', from: '', to: '' })).to.include({ afterMs: null, beforeMs: null });
    expect(() => pagingOf({ page: 1, limit: 24, config: '', from: '2026-02-30', to: '' })).to.throw('from: a date as YYYY-MM-DD');
    expect(() => pagingOf({ page: 1, limit: 24, config: '', from: '', to: 'yesterday' })).to.throw('to: a date');
    expect(() => pagingOf({ page: 1, limit: 24, config: '', from: '2026-11-03', to: '2026-11-01' })).to.throw('from: a date on or before to');
  });

  it('writes its address with only what differs from the defaults', () => {
    expect(galleryHref({ page: 1, limit: PAGE_SIZE, config: '', from: '', to: '' })).to.equal('/console/captures');
    expect(galleryHref({ page: 2, limit: 5, config: 'c1', from: '2026-11-01', to: '' })).to.equal('/console/captures?config=c1&from=2026-11-01&limit=5&page=2');
  });

  it("names a configuration by its custom title, else its URL, else the fallback; and escapes both in the gallery's items", () => {
    const view = (config: Record<string, unknown>) =>
      ({ config, ids: { last_job_id: null, screenshot_config_id: 'c1', embed_url: 'x' }, created_at: '1' }) as ConfigView;
    expect(configName(view({ custom_title: 'Home', url: 'https://a.example' }), 'f')).to.equal('Home');
    expect(configName(view({ custom_title: '  ', url: 'https://a.example' }), 'f')).to.equal('https://a.example');
    expect(configName(undefined, 'f')).to.equal('f');
    const shot = {
      id: '1',
      job_id: 'j"1',
      config_id: 'c1',
      direct_thumbnail_link: 'javascript:alert(1)',
      taken_at_ms: Date.UTC(2026, 10, 28),
      final_url: null,
    } as unknown as ScreenshotRef;
    const out = galleryItems([shot], new Map([['c1', view({ custom_title: '<img src=x onerror=alert(1)>' })]])).text;
    expect(out).to.contain('&lt;img src=x onerror=alert(1)&gt;').and.contain('href="/console/captures/j%221"').and.contain('<img src="#"');
    expect(out).not.to.contain('<img src=x');
  });
});
