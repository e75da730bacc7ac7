/**
 * A capture's key (captureKey): what makes two captures interchangeable (ttl reuse) and two snaps
 * one snap configuration. It must not move between releases: a key that changed with every
 * option added sent every repeated snap after an upgrade to a new capture, charged, under a new
 * configuration. So it hashes only the options that differ from their defaults, and these
 * keys are pinned: a change that alters them alters every stored key (then a migration must
 * move the stored ones, as db/migrations/20261130230001_capture_keys_by_difference.ts did).
 */
import { expect } from 'chai';
import { captureKey, OPTION_DEFAULTS, type SnapOptions } from '../../services/shared/screenshot-options';

const URL = 'https://example.com/';

describe('captureKey: the options that differ from their defaults, by name', () => {
  it('is pinned: the keys of these options are the ones stored by every release since', () => {
    expect(captureKey({ url: URL })).to.equal('85c4f4017e687b3f7f85c988153e2687b0f4cc66a4390c79ca1f2199d4b67d8c');
    expect(captureKey({ url: URL, wait: 0, image_format: 'png', fullpage: true } as SnapOptions)).to.equal(
      'bfcfcaca1d43f4e0179e7ef5de69abaede0759f30acd164af7e43f4466a9eefa',
    );
  });

  it('an option given at its default is the same capture as one left out; any other value is another', () => {
    const defaults = OPTION_DEFAULTS as Record<string, unknown>;
    expect(captureKey({ url: URL, image_format: defaults.image_format, wait: defaults.wait } as SnapOptions)).to.equal(captureKey({ url: URL }));
    expect(captureKey({ url: URL, image_format: 'png' } as SnapOptions)).to.not.equal(captureKey({ url: URL }));
    expect(captureKey({ url: `${URL}?b` })).to.not.equal(captureKey({ url: URL }));
  });

  it('the order options are given in changes nothing, nor do options about the answer (json, ttl)', () => {
    const a = { url: URL, image_format: 'png', fullpage: true } as SnapOptions;
    const b = { fullpage: true, image_format: 'png', url: URL } as SnapOptions;
    expect(captureKey(a)).to.equal(captureKey(b));
    expect(captureKey({ ...a, json: true, ttl: 60 } as SnapOptions)).to.equal(captureKey(a));
  });

  it("what store_to and custom_proxy_id point to is part of a capture's key, not of its configuration's", () => {
    const o = { url: URL } as SnapOptions;
    expect(captureKey(o, { destination: 'bucket-a' })).to.not.equal(captureKey(o));
    expect(captureKey(o, { destination: 'bucket-a' })).to.not.equal(captureKey(o, { destination: 'bucket-b' }));
    expect(captureKey(o, { proxy: 'p1' })).to.not.equal(captureKey(o, { destination: 'p1' }));
  });
});
