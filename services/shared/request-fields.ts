/**
 * What the browser takes as a capture's extra HTTP header or cookie (the `headers` and
 * `cookies` options), checked by the api's schema (the formats `header-name`, `header-value`,
 * `cookie-name`, `cookie-value`, whose notes say what is wrong) before anything is spent.
 *
 * The rules are Chromium's, as observed on 156 (test/capture/snap.test.ts sends each kind):
 * `Network.setExtraHTTPHeaders` refuses a name that is no HTTP token and a value with a line
 * break; a header the network stack sets itself makes the page fail to load
 * (net::ERR_INVALID_ARGUMENT) or is replaced (Connection, User-Agent); a value with another
 * control character reaches the site as a request its server refuses. `Network.setCookies`
 * refuses a name with '=' or ';', a value with ';', a control character (tab included) in
 * either, and white space around them; an empty or '.' domain and a path not from '/' or with
 * ';'; a domain that is no host name (with a space, say) sets a cookie no request carries.
 */

/** An HTTP token (RFC 9110 section 5.6.2): what a header's name is made of. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Whether the text holds a control character (C0 or DEL); a tab counts only unless `tabAllowed`. */
function hasControl(text: string, tabAllowed: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && !(tabAllowed && code === 0x09)) || code === 0x7f) return true;
  }
  return false;
}

/** Headers the browser's network stack writes itself: sending one fails the page's load, or is overwritten. */
const BROWSER_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'cookie2']);

/** What is wrong with a header's name, in words; null when the browser takes it. */
export function headerNameProblem(name: string): string | null {
  if (!TOKEN.test(name)) return "is not a header name (letters, digits and !#$%&'*+.^_`|~- only, no spaces or colons)";
  const lower = name.toLowerCase();
  if (lower === 'user-agent') return 'is set with the user_agent option; send the user agent there';
  if (BROWSER_HEADERS.has(lower) || lower.startsWith('proxy-')) return 'is written by the browser itself for each request and cannot be sent';
  return null;
}

/** What is wrong with a header's value; null when the browser takes it. */
export function headerValueProblem(value: string): string | null {
  return hasControl(value, true) ? 'holds a line break or another control character (a tab is the only one allowed)' : null;
}

/** What is wrong with a cookie's name; null when the browser takes it. */
export function cookieNameProblem(name: string): string | null {
  if (/[=;]/.test(name)) return "is not a cookie name: it holds '=' or ';'";
  if (hasControl(name, false)) return 'holds a control character (a tab or a line break)';
  if (name.trim() !== name) return 'has spaces around it';
  return null;
}

/** What is wrong with a cookie's value; null when the browser takes it. */
export function cookieValueProblem(value: string): string | null {
  if (value.includes(';')) return "holds ';', which ends a cookie's value (send each cookie as an item of its own)";
  if (hasControl(value, false)) return 'holds a control character (a tab or a line break)';
  if (value.trim() !== value) return 'has spaces around it';
  return null;
}

/** What is wrong with a cookie's domain; null when the browser takes it. */
export function cookieDomainProblem(domain: string): string | null {
  return /^\.?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/.test(domain) ? null : 'is not a host name (such as example.com, or .example.com for its subdomains too)';
}

/** What is wrong with a cookie's path; null when the browser takes it. */
export function cookiePathProblem(path: string): string | null {
  if (!path.startsWith('/')) return "is not a path: it must start with '/'";
  if (path.includes(';') || hasControl(path, false)) return "holds ';' or a control character";
  return null;
}
