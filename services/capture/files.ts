/**
 * A capture's files: the thumbnail made from its image, random names, and the writes to
 * storage, all or nothing (a failed write removes what the others wrote).
 */
import sharp from 'sharp';
import { OPTION_DEFAULTS, type SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import type { FileStore } from '../shared/storage';
import type { CaptureOutput } from './page-capture';
import type { StoredFiles } from './screenshots';

// Thumbnails are small; one libvips thread leaves the cores to Chromium.
sharp.concurrency(1);

const EXTENSION: Record<string, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'application/pdf': 'pdf' };
const HTML_TYPE = 'text/html; charset=utf-8';

export interface Thumbnail {
  data: Buffer;
  contentType: string;
}

/** A capture's output with its thumbnail (none for html_only): everything write() stores. */
export interface Rendered {
  out: CaptureOutput;
  thumb: Thumbnail | null;
}

/** The thumbnail: thumb_width wide (the option's default unless given), in the image's own raster format. */
export async function thumbnail(out: CaptureOutput, o: SnapOptions): Promise<Thumbnail | null> {
  const source = out.thumbnailSource ?? out.image;
  if (!source) return null;
  // Chromium tags its screenshots with an sRGB profile; converting sRGB to sRGB changes no
  // pixel but triples the thumbnail's cost (measured: 12 ms against 4.5 ms for 1280x800).
  const resized = sharp(source, { ignoreIcc: true }).resize({ width: o.thumb_width ?? OPTION_DEFAULTS.thumb_width, ...(o.thumb_height ? { height: o.thumb_height, fit: 'cover', position: 'top' } : {}) });
  if (out.contentType === 'image/png') return { data: await resized.png().toBuffer(), contentType: 'image/png' };
  if (out.contentType === 'image/webp') return { data: await resized.webp().toBuffer(), contentType: 'image/webp' };
  return { data: await resized.jpeg({ quality: 80 }).toBuffer(), contentType: 'image/jpeg' };
}

/**
 * Makes the thumbnail while the engine still holds the browser: the used context is
 * disposed only afterwards, as disposing it alongside slows the thumbnail down 2-3x on 2
 * cores. Writing the files (an upload, with GCS) happens after the browser is let go.
 */
export function render(o: SnapOptions) {
  return async (out: CaptureOutput): Promise<Rendered> => ({ out, thumb: await thumbnail(out, o) });
}

const nameFor = (contentType: string) => `${randomId(18)}.${EXTENSION[contentType] ?? 'bin'}`;

export class CaptureFiles {
  constructor(private readonly store: FileStore) {}

  /** Writes the capture's files; on failure, removes whatever was written and rethrows. */
  async write({ out, thumb }: Rendered): Promise<StoredFiles> {
    const files: StoredFiles = { image_name: null, thumb_name: null, html_name: null, content_type: out.html !== undefined ? HTML_TYPE : (out.contentType ?? null) };
    const writes: Array<Promise<void>> = [];
    if (out.html !== undefined) {
      files.html_name = `${randomId(18)}.html`;
      writes.push(this.store.put(files.html_name, Buffer.from(out.html, 'utf8'), HTML_TYPE));
    }
    if (out.image && out.contentType) {
      files.image_name = nameFor(out.contentType);
      writes.push(this.store.put(files.image_name, out.image, out.contentType));
    }
    if (thumb) {
      files.thumb_name = nameFor(thumb.contentType);
      writes.push(this.store.put(files.thumb_name, thumb.data, thumb.contentType));
    }
    const failed = (await Promise.allSettled(writes)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await this.remove(files);
      throw failed.reason;
    }
    return files;
  }

  /** Deletes a capture's files; a file already gone is not an error. */
  async remove(files: Pick<StoredFiles, 'image_name' | 'thumb_name' | 'html_name'>): Promise<void> {
    const names = [files.image_name, files.thumb_name, files.html_name].filter((n): n is string => Boolean(n));
    await Promise.allSettled(names.map((n) => this.store.delete(n)));
  }
}
