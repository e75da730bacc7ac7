/**
 * The device presets the `device` option names and GET /devices lists: a vendored copy of
 * Playwright's device descriptors (devices.json says from which release and when), each
 * with the client hints (User-Agent Client Hints, CDP's userAgentMetadata) its user agent
 * implies. No maintained npm package publishes such a list on its own (puppeteer-core and
 * playwright-core carry one inside a whole browser driver), so it is copied here; docs/api.md
 * says how to refresh it.
 */
import { Type, type Static } from '@sinclair/typebox';
import didYouMean, { ReturnTypeEnums, ThresholdTypeEnums } from 'didyoumean2';
import list from './devices.json';

/** What the list says of one device (devices.json). */
interface ListedDevice {
  name: string;
  user_agent: string;
  width: number;
  height: number;
  scale_factor: number;
  mobile: boolean;
  touch: boolean;
}

const CLIENT_HINTS_SCHEMA = Type.Object(
  {
    brands: Type.Array(Type.Object({ brand: Type.String(), version: Type.String() })),
    fullVersionList: Type.Array(Type.Object({ brand: Type.String(), version: Type.String() })),
    fullVersion: Type.String(),
    platform: Type.String(),
    platformVersion: Type.String(),
    architecture: Type.String(),
    model: Type.String(),
    mobile: Type.Boolean(),
  },
  {
    description:
      "The User-Agent Client Hints the device's browser sends (navigator.userAgentData, Sec-CH-UA headers), in CDP's userAgentMetadata shape; " +
      'null for a browser that sends none (Safari, Firefox).',
  },
);
export type ClientHints = Static<typeof CLIENT_HINTS_SCHEMA>;

/** One device preset as GET /devices lists it. */
export const DEVICE_RECORD_SCHEMA = Type.Object({
  name: Type.String({ description: 'The value to pass as device (matched without regard to case).' }),
  width: Type.Integer({ description: 'Viewport width in CSS pixels (page_width overrides it).' }),
  height: Type.Integer({ description: 'Viewport height in CSS pixels (page_height overrides it).' }),
  scale_factor: Type.Number({ description: 'Device pixel ratio (scale_factor overrides it).' }),
  mobile: Type.Boolean({ description: 'Emulated as a mobile browser (meta viewport honoured, overlay scrollbars).' }),
  touch: Type.Boolean({ description: 'Touch input: (pointer: coarse), ontouchstart, navigator.maxTouchPoints > 0.' }),
  user_agent: Type.String({ description: 'The user agent sent (user_agent overrides it, and then no client hints are sent).' }),
  client_hints: Type.Union([CLIENT_HINTS_SCHEMA, Type.Null()]),
});
export type Device = Static<typeof DEVICE_RECORD_SCHEMA>;

/** Where the list comes from and when it was copied (devices.json). */
export const DEVICE_LIST_SOURCE: { source: string; retrieved: string } = { source: list.source, retrieved: list.retrieved };

const GREASE = { brand: 'Not.A/Brand', version: '99' };

/**
 * The client hints a Chromium browser with this user agent sends; null for one that sends
 * none (Safari, Firefox and the old engines of some presets).
 */
export function clientHintsOf(userAgent: string, mobile: boolean): ClientHints | null {
  const chrome = /\bChrome\/(\d+)([\d.]*)/.exec(userAgent);
  if (!chrome || /Firefox\/|FxiOS|CriOS/.test(userAgent)) return null;
  const edge = /\bEdg(?:A)?\/(\d+)([\d.]*)/.exec(userAgent);
  const [major, fullVersion] = edge ? [edge[1]!, `${edge[1]}${edge[2]}`] : [chrome[1]!, `${chrome[1]}${chrome[2]}`];
  const brand = edge ? 'Microsoft Edge' : 'Google Chrome';
  const brands = [{ brand: 'Chromium', version: chrome[1]! }, { brand, version: major }, GREASE];
  const fullVersionList = [
    { brand: 'Chromium', version: `${chrome[1]}${chrome[2]}` },
    { brand, version: fullVersion },
    { brand: GREASE.brand, version: '99.0.0.0' },
  ];
  let platform = 'Linux';
  let platformVersion = '';
  let model = '';
  let architecture = 'x86';
  const android = /Android ([\d.]+)/.exec(userAgent);
  // The model is the last part of the UA's system information: "(Linux; Android 14; Pixel 7)".
  const system = (/\((.*?)\) AppleWebKit/.exec(userAgent)?.[1] ?? '').split('; ');
  const mac = /Mac OS X (\d+(?:[_.]\d+)*)/.exec(userAgent);
  if (android) {
    platform = 'Android';
    platformVersion = android[1]!;
    const last = system[system.length - 1] ?? '';
    model = last.startsWith('Android') ? '' : last.replace(/\s*Build\/.*$/, '').trim();
    architecture = '';
  } else if (/Windows NT/.test(userAgent)) {
    platform = 'Windows';
    platformVersion = '10.0.0';
  } else if (mac) {
    platform = 'macOS';
    platformVersion = mac[1]!.replace(/_/g, '.');
  } else if (/CrOS/.test(userAgent)) {
    platform = 'Chrome OS';
  }
  return { brands, fullVersionList, fullVersion, platform, platformVersion, architecture, model, mobile };
}

/** Every preset, in the list's order. */
export const DEVICES: readonly Device[] = (list.devices as ListedDevice[]).map((d) => ({
  name: d.name,
  width: d.width,
  height: d.height,
  scale_factor: d.scale_factor,
  mobile: d.mobile,
  touch: d.touch,
  user_agent: d.user_agent,
  client_hints: clientHintsOf(d.user_agent, d.mobile),
}));

const BY_NAME: ReadonlyMap<string, Device> = new Map(DEVICES.map((d) => [d.name.toLowerCase(), d]));

/** The preset of that name (without regard to case), or undefined. */
export function findDevice(name: string): Device | undefined {
  return BY_NAME.get(name.trim().toLowerCase());
}

/** Up to `max` preset names close to one the list does not have (a typo), the closest first. */
export function closeDeviceNames(name: string, max = 3): string[] {
  const matches = didYouMean(
    name,
    DEVICES.map((d) => d.name),
    {
      returnType: ReturnTypeEnums.ALL_SORTED_MATCHES,
      thresholdType: ThresholdTypeEnums.SIMILARITY,
      threshold: 0.5,
    },
  );
  return matches.slice(0, max);
}
