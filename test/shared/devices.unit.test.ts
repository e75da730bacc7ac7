/**
 * The device presets (services/shared/devices.ts): the vendored list is well formed, names
 * are found without regard to case, and the client hints follow from each user agent.
 */
import { expect } from 'chai';
import { DEVICE_LIST_SOURCE, DEVICE_RECORD_SCHEMA, DEVICES, clientHintsOf, closeDeviceNames, findDevice } from '../../services/shared/devices';
import { newAjv } from '../../services/shared/param-notes';

describe('device presets', () => {
  it('names its source and the date it was copied', () => {
    expect(DEVICE_LIST_SOURCE.source).to.contain('playwright-core');
    expect(DEVICE_LIST_SOURCE.retrieved).to.match(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('has well-formed, distinct presets that meet the published record schema', () => {
    expect(DEVICES.length).to.be.greaterThan(100);
    const names = DEVICES.map((d) => d.name.toLowerCase());
    expect(new Set(names).size).to.equal(names.length);
    const valid = newAjv().compile(DEVICE_RECORD_SCHEMA);
    for (const d of DEVICES) {
      expect(valid(d), `${d.name}: ${JSON.stringify(valid.errors)}`).to.equal(true);
      expect(d.width, d.name).to.be.within(100, 7680);
      expect(d.height, d.name).to.be.within(100, 7680);
      expect(d.scale_factor, d.name).to.be.within(1, 5);
    }
  });

  it('finds a preset without regard to case, and suggests close names for a typo', () => {
    expect(findDevice('IPHONE 15 pro')?.name).to.equal('iPhone 15 Pro');
    expect(findDevice('Nokia 3310')).to.equal(undefined);
    expect(closeDeviceNames('iphone 15 pr')[0]).to.equal('iPhone 15 Pro');
  });

  it('gives an Android Chrome preset its platform, version, model and mobile hints', () => {
    expect(findDevice('Pixel 9')?.client_hints).to.include({ platform: 'Android', platformVersion: '14', model: 'Pixel 9', mobile: true });
    expect(findDevice('Pixel 4a (5G)')?.client_hints?.model).to.equal('Pixel 4a (5G)');
    const hints = clientHintsOf(
      'Mozilla/5.0 (Linux; Android 8.0.0; SM-G965U Build/R16NW) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.1.2 Mobile Safari/537.36',
      true,
    );
    expect(hints).to.include({ model: 'SM-G965U', platformVersion: '8.0.0', fullVersion: '120.0.1.2' });
    expect(hints?.brands.map((b) => b.brand)).to.include.members(['Chromium', 'Google Chrome']);
  });

  it('gives desktop Chrome and Edge their platform and brand, and Safari and Firefox none', () => {
    expect(findDevice('Desktop Chrome')?.client_hints).to.include({ platform: 'Windows', mobile: false });
    expect(findDevice('Desktop Edge')?.client_hints?.brands.map((b) => b.brand)).to.include('Microsoft Edge');
    expect(findDevice('iPhone 15 Pro')?.client_hints).to.equal(null);
    expect(findDevice('Desktop Safari')?.client_hints).to.equal(null);
    expect(findDevice('Desktop Firefox')?.client_hints).to.equal(null);
  });

  it('the device format of the option table accepts the names and refuses others', () => {
    const valid = newAjv().compile({ type: 'string', format: 'device' });
    expect(valid('pixel 9')).to.equal(true);
    expect(valid('Pixel 99')).to.equal(false);
  });
});
