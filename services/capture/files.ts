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

/** A capture's output with its thumbnail (none for html_only), and its own files on their way to storage. */
export interface Rendered {
  out: CaptureOutput;
  thumb: Thumbnail | null;
  /** The output's own files (image, HTML), written while the thumbnail was made; write() adds the thumbnail. */
  written: Promise<StoredFiles>;
}

/** The thumbnail: thumb_width wide (the option's default unless given), in the image's own raster format. */
export async function thumbnail(out: CaptureOutput, o: SnapOptions): Promise<Thumbnail | null> {
  const source = out.thumbnailSource ?? out.image;
  if (!source) return null;
  // Chromium tags its screenshots with an sRGB profile; converting sRGB to sRGB changes no
  // pixel but triples the thumbnail's cost (measured: 12 ms against 4.5 ms for 1280x800).
  // Read top to bottom, once: a quarter less time for a full page (measured: 122 ms against
  // 165 ms for 1280x10000), less for a viewport too.
  const resized = sharp(source, { ignoreIcc: true, sequentialRead: true }).resize({ width: o.thumb_width ?? OPTION_DEFAULTS.thumb_width, ...(o.thumb_height ? { height: o.thumb_height, fit: 'cover', position: 'top' } : {}) });
  if (out.contentType === 'image/png') return { data: await resized.png().toBuffer(), contentType: 'image/png' };
  if (out.contentType === 'image/webp') return { data: await resized.webp().toBuffer(), contentType: 'image/webp' };
  // Standard Huffman tables, not ones optimised for this image: the file is about 3% larger,
  // made with 10-25% less CPU (measured: 10.1 ms against 8.3 for a 1280x800 capture, 78-98
  // ms against 69-70 for 1280x10000).
  return { data: await resized.jpeg({ quality: 80, optimiseCoding: false }).toBuffer(), contentType: 'image/jpeg' };
}

const nameFor = (contentType: string) => `${randomId(18)}.${EXTENSION[contentType] ?? 'bin'}`;

export class CaptureFiles {
  constructor(private readonly store: FileStore) {}

  /**
   * The engine's `finish`: starts writing the output's own files and makes the thumbnail
   * meanwhile (libvips works on a thread of its own), while the engine still holds the
   * browser, whose used context is disposed only afterwards: disposing it alongside slows
   * the thumbnail down 2-3x on 2 cores. Only the thumbnail is waited for here; the writes
   * (an upload, with GCS) go on after the browser is let go, and write() waits for them.
   */
  render(o: SnapOptions): (out: CaptureOutput) => Promise<Rendered> {
    return async (out) => {
      const written = this.writeOutput(out);
      written.catch(() => undefined);
      try {
        return { out, thumb: await thumbnail(out, o), written };
      } catch (err) {
        await this.discard({ written });
        throw err;
      }
    };
  }

  /** All of the capture's files, stored: the output's, then the thumbnail's. On failure, removes whatever was written and rethrows. */
  async write({ thumb, written }: Rendered): Promise<StoredFiles> {
    const files = await written;
    if (!thumb) return files;
    const all = { ...files, thumb_name: nameFor(thumb.contentType) };
    try {
      await this.store.put(all.thumb_name, thumb.data, thumb.contentType);
    } catch (err) {
      await this.remove(all);
      throw err;
    }
    return all;
  }

  /** Removes what a rendered capture wrote, when it is not recorded after all. */
  async discard({ written }: Pick<Rendered, 'written'>): Promise<void> {
    const files = await written.catch(() => null);
    if (files) await this.remove(files);
  }

  /** The output's own files (image, HTML), all or nothing. */
  private async writeOutput(out: CaptureOutput): Promise<StoredFiles> {
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
