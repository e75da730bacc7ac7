/**
 * What a page is emulated as beyond its viewport: a device preset (device), the colour
 * scheme (dark_mode), reduced motion (reduced_motion) and the CSS media type (media_type).
 * All of it is set on the capture's own page, which lives in its own browser context (a
 * fresh one per capture), so nothing of it reaches the next capture on the same browser.
 */
import { type Device, clientHintsOf, findDevice } from '../../shared/devices';
import { serviceError } from '../../shared/errors';
import type { SnapOptions } from '../../shared/screenshot-options';
import type { PageSession } from './page-session';

type Params = Record<string, unknown>;

/** The preset the options name, or null; a name the list no longer has is refused (a stored configuration's). */
export function deviceOf(o: Pick<SnapOptions, 'device'>): Device | null {
  if (o.device === undefined) return null;
  const device = findDevice(o.device);
  if (!device) throw serviceError('invalid_parameter', `device: "${o.device}" is not a known device; GET /devices lists the names.`);
  return device;
}

/**
 * The options with the preset's viewport, scale factor and user agent where the capture did
 * not give its own (explicit options override the preset): what the rest of the capture
 * (viewport, full page, PDF size) reads.
 */
export function withDevice(o: SnapOptions): SnapOptions {
  const device = deviceOf(o);
  if (!device) return o;
  return {
    ...o,
    page_width: o.page_width ?? device.width,
    page_height: o.page_height ?? device.height,
    scale_factor: o.scale_factor ?? device.scale_factor,
    user_agent: o.user_agent ?? device.user_agent,
  };
}

/** setDeviceMetricsOverride's extra parameters for a mobile preset (a portrait or landscape screen); {} otherwise. */
export function mobileMetrics(o: Pick<SnapOptions, 'device'>, width: number, height: number): Params {
  const device = deviceOf(o);
  if (!device?.mobile) return {};
  const landscape = width > height;
  return { mobile: true, screenOrientation: landscape ? { type: 'landscapePrimary', angle: 90 } : { type: 'portraitPrimary', angle: 0 } };
}

/**
 * setUserAgentOverride's parameters besides the user agent, for one the options set (theirs or
 * a preset's): navigator.platform as the browser it names reports it (an iPhone's page would
 * otherwise read "Linux x86_64"), and the client hints when the user agent is the preset's
 * own (a user agent given with user_agent claims none: they would contradict it).
 */
export function userAgentParams(o: Pick<SnapOptions, 'device' | 'user_agent'>): Params {
  if (o.user_agent === undefined) return {};
  const platform = navigatorPlatformOf(o.user_agent);
  const device = deviceOf(o);
  const hints = device?.client_hints && o.user_agent === device.user_agent ? { userAgentMetadata: device.client_hints } : {};
  return { ...(platform ? { platform } : {}), ...hints };
}

/** navigator.platform in the browser a user agent names; '' for one it does not name (the browser's own is kept). */
export function navigatorPlatformOf(userAgent: string): string {
  const device = /\((iPhone|iPad|iPod)\b/.exec(userAgent);
  if (device) return device[1]!;
  if (/Android/.test(userAgent)) return 'Linux armv8l';
  if (/Windows/.test(userAgent)) return 'Win32';
  if (/Macintosh|Mac OS X/.test(userAgent)) return 'MacIntel';
  if (/CrOS|X11|Linux/.test(userAgent)) return 'Linux x86_64';
  return '';
}

/**
 * A user agent the options set that names no Chromium browser (Safari, Firefox, Chrome on iOS,
 * which is Safari's engine, or an agent of the caller's own): the page must find no
 * navigator.userAgentData, as in those browsers. Chromium has no setting for that, so a
 * script removes it before the page's own run (in the page and its same-site frames).
 */
export function hidesUserAgentData(o: Pick<SnapOptions, 'user_agent'>): boolean {
  return o.user_agent !== undefined && clientHintsOf(o.user_agent, false) === null;
}

/** The emulation commands the options ask for besides the viewport and the user agent (none for a plain capture). */
export function emulate(page: PageSession, o: SnapOptions): Array<Promise<unknown>> {
  const steps: Array<Promise<unknown>> = [];
  const features: Array<{ name: string; value: string }> = [];
  if (o.dark_mode) features.push({ name: 'prefers-color-scheme', value: 'dark' });
  if (o.reduced_motion) features.push({ name: 'prefers-reduced-motion', value: 'reduce' });
  if (features.length || o.media_type) steps.push(page.send('Emulation.setEmulatedMedia', { media: o.media_type ?? '', features }));
  if (deviceOf(o)?.touch) steps.push(page.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 5 }));
  if (hidesUserAgentData(o)) steps.push(page.send('Page.addScriptToEvaluateOnNewDocument', { source: 'delete Navigator.prototype.userAgentData;' }));
  return steps;
}
