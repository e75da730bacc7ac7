/**
 * The images of POST /ai/analyze, fetched under the egress policy a capture obeys (DESIGN
 * section 5): each host is resolved once and checked before any credit is reserved
 * (`admitAll`), the connection goes to the address that was checked (a pinned lookup, so DNS
 * rebinding cannot swap it), every redirect target is checked the same way, the body is
 * counted while it streams and cut off past the limit, and the whole fetch, redirects
 * included, has one deadline. What an image is comes from its first bytes (PNG, JPEG, WebP,
 * GIF), never from its name or Content-Type. A link to one of this service's own stored files
 * (`CDN_URL/<name>`) is read from storage instead of over the network.
 *
 * Every refusal is the caller's to fix and names the image as `urls[i]` and why.
 */
import http from 'node:http';
import https from 'node:https';
import sharp from 'sharp';
import { IMAGE_ANALYSIS_LIMITS } from '../shared/contracts';
import { type Admission, pinnedLookup } from '../shared/egress';
import { type ErrorCode, serviceError } from '../shared/errors';
import type { FileStore } from '../shared/storage';
import type { ImageContentType } from './providers';

/** The most one image may weigh (the hosted service's documented 20 MB). */
export const IMAGE_MAX_BYTES = IMAGE_ANALYSIS_LIMITS.imageBytes;
/** The most pixels one image may have once decoded (a 20 MB PNG can hold a billion). */
export const IMAGE_MAX_PIXELS = 50_000_000;
/** Redirects followed per image. */
export const MAX_REDIRECTS = 3;

export interface FetchedImage {
  data: Buffer;
  /** From the bytes. */
  contentType: ImageContentType;
  width: number;
  height: number;
}

/** An image URL whose host was checked: the address to connect to, or the stored file it names. */
export type AdmittedUrl = { index: number; url: URL; pinned: { address: string; family: 4 | 6 } } | { index: number; url: URL; stored: string };

export interface ImageSourceDeps {
  /** The egress policy's decision on a host (EgressPolicy.admit). */
  admit(host: string): Promise<Admission>;
  /** One image's fetch, redirects included (AI_IMAGE_TIMEOUT_MS). */
  timeoutMs: number;
  maxBytes?: number;
  store: Pick<FileStore, 'get'>;
  /** CDN_URL: links under it name stored files. */
  cdnUrl: string;
}

/** The image type its first bytes say, or null. */
export function sniffImageType(b: Buffer): ImageContentType | null {
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (b.length >= 12 && b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  return null;
}

const shown = (url: URL | string) => {
  const s = String(url);
  return s.length > 200 ? `${s.slice(0, 197)}...` : s;
};

function refused(code: ErrorCode, index: number, url: URL | string, why: string) {
  return serviceError(code, `urls[${index}]: ${shown(url)} ${why}`, { param: `urls[${index}]` });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const mb = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;

export class ImageSource {
  private readonly maxBytes: number;

  constructor(private readonly deps: ImageSourceDeps) {
    this.maxBytes = deps.maxBytes ?? IMAGE_MAX_BYTES;
  }

  /** The stored file a link names, when it is one of this service's own (CDN_URL/<name>). */
  private storedName(url: URL): string | null {
    const prefix = `${this.deps.cdnUrl}/`;
    const name = url.href.startsWith(prefix) && !url.search && !url.hash ? url.href.slice(prefix.length) : '';
    return /^[A-Za-z0-9_-]+\.[a-z]+$/.test(name) ? name : null;
  }

  /** Checks where `url` may be fetched from: the resolved, allowed address (or a stored file); throws the caller's error. */
  private async admitOne(index: number, url: URL, shownAs: URL = url): Promise<{ address: string; family: 4 | 6 }> {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw refused('url_not_allowed', index, shownAs, `uses ${url.protocol}; images are fetched over http and https only.`);
    const admission = await this.deps.admit(url.hostname);
    if (admission.allowed) return admission;
    if (admission.unresolvable) throw refused('image_unreachable', index, shownAs, `could not be fetched: ${url.hostname} ${admission.reason}.`);
    const where = url === shownAs ? url.hostname : `it redirects to ${shown(url)}, whose host ${url.hostname}`;
    throw refused(
      'url_not_allowed',
      index,
      shownAs,
      `is not allowed: ${where} ${admission.reason}. Images are fetched from the public internet only (an operator can allow an internal address with ` +
        `EGRESS_ALLOW_ADDRESSES).`,
    );
  }

  /** Resolves and checks every URL's host once, in order; the first refusal is thrown. Nothing is fetched. */
  async admitAll(urls: readonly string[]): Promise<AdmittedUrl[]> {
    const out: AdmittedUrl[] = [];
    for (const [index, raw] of urls.entries()) {
      const url = new URL(raw);
      const stored = this.storedName(url);
      out.push(stored ? { index, url, stored } : { index, url, pinned: await this.admitOne(index, url) });
    }
    return out;
  }

  /** The image, checked by its bytes; throws the caller's error naming it. */
  async fetch(a: AdmittedUrl): Promise<FetchedImage> {
    let data: Buffer;
    if ('stored' in a) {
      const file = await this.deps.store.get(a.stored);
      if (!file) throw refused('image_unreachable', a.index, a.url, 'is not a stored file of this service (it was deleted, or the link is wrong).');
      data = file.data;
    } else {
      data = await this.download(a);
    }
    if (data.length > this.maxBytes) throw refused('image_too_large', a.index, a.url, `is ${mb(data.length)}; an image may be at most ${mb(this.maxBytes)}.`);
    const contentType = sniffImageType(data);
    if (!contentType) {
      throw refused(
        'image_not_supported',
        a.index,
        a.url,
        'is not a PNG, JPEG, WebP or GIF image (judged by its bytes, whatever its name or Content-Type says).',
      );
    }
    let width = 0;
    let height = 0;
    try {
      ({ width = 0, height = 0 } = await sharp(data).metadata());
    } catch {
      throw refused('image_not_supported', a.index, a.url, `starts like a ${contentType.slice(6).toUpperCase()} image but could not be read as one.`);
    }
    if (width * height > IMAGE_MAX_PIXELS) {
      throw refused('image_too_large', a.index, a.url, `is ${width}x${height} pixels; an image may have at most ${IMAGE_MAX_PIXELS / 1_000_000} megapixels.`);
    }
    return { data, contentType, width, height };
  }

  private async download(a: Extract<AdmittedUrl, { pinned: unknown }>): Promise<Buffer> {
    const deadline = Date.now() + this.deps.timeoutMs;
    let url = a.url;
    let pinned = a.pinned;
    for (let hop = 0; ; hop++) {
      const answer = await this.get(a, url, pinned, deadline);
      if (answer.kind === 'body') return answer.data;
      if (hop >= MAX_REDIRECTS) throw refused('image_unreachable', a.index, a.url, `could not be fetched: it was redirected more than ${MAX_REDIRECTS} times.`);
      let next: URL;
      try {
        next = new URL(answer.location, url);
      } catch {
        throw refused('image_unreachable', a.index, a.url, `could not be fetched: it redirects to an invalid URL.`);
      }
      pinned = await this.admitOne(a.index, next, a.url);
      url = next;
    }
  }

  /** One request: the body (within the limit), or where it redirects to. */
  private get(
    a: AdmittedUrl,
    url: URL,
    pinned: { address: string; family: 4 | 6 },
    deadline: number,
  ): Promise<{ kind: 'body'; data: Buffer } | { kind: 'redirect'; location: string }> {
    const seconds = Math.round(this.deps.timeoutMs / 100) / 10;
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(err);
      };
      const req = client.request(url, {
        method: 'GET',
        lookup: pinnedLookup(pinned),
        agent: false,
        headers: {
          accept: 'image/png,image/jpeg,image/webp,image/gif;q=0.9,*/*;q=0.5',
          'accept-encoding': 'identity',
          'user-agent': 'snapservice-image-fetch/1',
        },
      });
      const timer = setTimeout(
        () => fail(refused('image_unreachable', a.index, a.url, `could not be fetched within ${seconds} s.`)),
        Math.max(0, deadline - Date.now()),
      );
      req.on('error', (err) =>
        fail(refused('image_unreachable', a.index, a.url, `could not be fetched (${(err as NodeJS.ErrnoException).code ?? err.message}).`)),
      );
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (REDIRECTS.has(status) && location) {
          settled = true;
          clearTimeout(timer);
          res.resume();
          req.destroy();
          resolve({ kind: 'redirect', location });
          return;
        }
        if (status < 200 || status >= 300) {
          fail(refused('image_unreachable', a.index, a.url, `could not be fetched: ${url.host} answered HTTP ${status}.`));
          return;
        }
        const declared = Number(res.headers['content-length']);
        const tooLarge = () => refused('image_too_large', a.index, a.url, `is larger than ${mb(this.maxBytes)}, the most an image may weigh.`);
        if (Number.isFinite(declared) && declared > this.maxBytes) {
          fail(tooLarge());
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.maxBytes) fail(tooLarge());
          else chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({ kind: 'body', data: Buffer.concat(chunks) });
        });
        res.on('error', (err) => fail(refused('image_unreachable', a.index, a.url, `could not be fetched: the answer broke off (${err.message}).`)));
      });
      req.end();
    });
  }
}
