/**
 * A capture's files: random names, the writes to storage, all or nothing (a failed write
 * removes what the others wrote), and thumbnails. An image's thumbnail is made when it is
 * first asked for (thumbnailOf, through the CDN route), from the stored image: decoding a
 * full-page image takes longer than any other work of ours on a capture (about 70 ms of
 * CPU for 1280x10000), and most thumbnails are never fetched. A PDF's thumbnail is made
 * with the capture, from the raster Chromium makes beside it.
 */
import sharp from 'sharp';
import { OPTION_DEFAULTS, type SnapOptions } from '../../shared/screenshot-options';
import { randomId } from '../../shared/secrets';
import type { FileStore } from '../../shared/storage';
import { type ThumbnailSize, parseThumbnailName, thumbnailName } from '../public/thumbnail-names';
import type { CaptureOutput } from '../browsers/engine';
import type { StoredFiles } from './screenshots';

// Thumbnails are small; one libvips thread leaves the cores to Chromium.
sharp.concurrency(1);

const EXTENSION: Record<string, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'application/pdf': 'pdf' };
const HTML_TYPE = 'text/html; charset=utf-8';
/** markdown=true's file (`<id>.md`) and metadata=true's (`<id>.metadata.json`), beside the image (page-text.ts). */
export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
export const METADATA_TYPE = 'application/json; charset=utf-8';

export interface Thumbnail {
  data: Buffer;
  contentType: string;
}

/** A capture's output, its thumbnail when it is made with the capture (a PDF's), and its own files on their way to storage. */
export interface Rendered {
  out: CaptureOutput;
  thumb: Thumbnail | null;
  /** The output's own files (image, HTML); write() adds a PDF's thumbnail. */
  written: Promise<StoredFiles>;
}

/** The thumbnail size the options ask for. */
export function thumbnailSize(o: Pick<SnapOptions, 'thumb_width' | 'thumb_height'>): ThumbnailSize {
  return { width: o.thumb_width ?? OPTION_DEFAULTS.thumb_width, height: o.thumb_height ?? null };
}

/** A thumbnail of `source` (an image of `contentType`) at `size`, in the image's own raster format (JPEG for anything else). */
export async function makeThumbnail(source: Buffer, contentType: string, size: ThumbnailSize): Promise<Thumbnail> {
  // Chromium tags its screenshots with an sRGB profile; converting sRGB to sRGB changes no
  // pixel but triples the thumbnail's cost (measured: 12 ms against 4.5 ms for 1280x800).
  // Read top to bottom, once: a quarter less time for a full page (measured: 122 ms against
  // 165 ms for 1280x10000), less for a viewport too.
  const resized = sharp(source, { ignoreIcc: true, sequentialRead: true }).resize({
    width: size.width,
    ...(size.height ? { height: size.height, fit: 'cover', position: 'top' } : {}),
  });
  if (contentType === 'image/png') return { data: await resized.png().toBuffer(), contentType: 'image/png' };
  if (contentType === 'image/webp') return { data: await resized.webp().toBuffer(), contentType: 'image/webp' };
  // Standard Huffman tables, not ones optimised for this image: the file is about 3% larger,
  // made with 10-25% less CPU (measured: 10.1 ms against 8.3 for a 1280x800 capture, 78-98
  // ms against 69-70 for 1280x10000).
  return { data: await resized.jpeg({ quality: 80, optimiseCoding: false }).toBuffer(), contentType: 'image/jpeg' };
}

const nameFor = (contentType: string) => `${randomId(18)}.${EXTENSION[contentType] ?? 'bin'}`;

export class CaptureFiles {
  /** Thumbnails being made (thumbnailOf), by name. */
  private readonly making = new Map<string, Promise<boolean>>();

  constructor(private readonly store: FileStore) {}

  /**
   * The engine's `finish`: starts writing the output's own files, and makes a PDF's
   * thumbnail meanwhile (libvips works on a thread of its own), while the engine still
   * holds the browser, whose used context is disposed only afterwards: disposing it
   * alongside slows the thumbnail down 2-3x on 2 cores. The writes (an upload, with GCS) go
   * on after the browser is let go, and write() waits for them.
   */
  render(o: SnapOptions): (out: CaptureOutput) => Promise<Rendered> {
    return async (out) => {
      const written = this.writeOutput(out, thumbnailSize(o));
      written.catch(() => undefined);
      try {
        return { out, thumb: out.thumbnailSource ? await makeThumbnail(out.thumbnailSource, 'image/jpeg', thumbnailSize(o)) : null, written };
      } catch (err) {
        await this.discard({ written });
        throw err;
      }
    };
  }

  /** All of the capture's files, stored: the output's, then a PDF's thumbnail. On failure, removes whatever was written and rethrows. */
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

  /**
   * Makes and stores the thumbnail `name` (one write() recorded) from the stored image
   * `imageName`; false when the image is gone. Several requests for the same thumbnail at
   * once make it once.
   */
  thumbnailOf(name: string, imageName: string): Promise<boolean> {
    let making = this.making.get(name);
    if (!making) {
      making = this.makeAndStore(name, imageName).finally(() => this.making.delete(name));
      this.making.set(name, making);
    }
    return making;
  }

  private async makeAndStore(name: string, imageName: string): Promise<boolean> {
    const wanted = parseThumbnailName(name);
    if (!wanted) return false;
    const image = await this.store.get(imageName);
    if (!image) return false;
    const thumb = await makeThumbnail(image.data, image.contentType, wanted.size);
    await this.store.put(name, thumb.data, thumb.contentType);
    return true;
  }

  /** Removes what a rendered capture wrote, when it is not recorded after all. */
  async discard({ written }: Pick<Rendered, 'written'>): Promise<void> {
    const files = await written.catch(() => null);
    if (files) await this.remove(files);
  }

  /**
   * The output's own files (image, HTML, and the Markdown and metadata named like the image),
   * all or nothing; an image's thumbnail is named, to be made when first asked for.
   */
  private async writeOutput(out: CaptureOutput, thumb: ThumbnailSize): Promise<StoredFiles> {
    const files: StoredFiles = {
      image_name: null,
      thumb_name: null,
      html_name: null,
      content_type: out.html !== undefined ? HTML_TYPE : (out.contentType ?? null),
    };
    const writes: Array<Promise<void>> = [];
    const id = randomId(18);
    if (out.markdown !== undefined) {
      files.markdown_name = `${id}.md`;
      writes.push(this.store.put(files.markdown_name, Buffer.from(out.markdown, 'utf8'), MARKDOWN_TYPE));
    }
    if (out.metadata !== undefined) {
      files.metadata_name = `${id}.metadata.json`;
      writes.push(this.store.put(files.metadata_name, Buffer.from(JSON.stringify(out.metadata, null, 2), 'utf8'), METADATA_TYPE));
    }
    if (out.html !== undefined) {
      files.html_name = `${id}.html`;
      writes.push(this.store.put(files.html_name, Buffer.from(out.html, 'utf8'), HTML_TYPE));
    }
    if (out.image && out.contentType) {
      files.image_name = `${id}.${EXTENSION[out.contentType] ?? 'bin'}`;
      files.thumb_name = thumbnailName(randomId(18), out.contentType, thumb);
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
  async remove(files: Pick<StoredFiles, 'image_name' | 'thumb_name' | 'html_name' | 'markdown_name' | 'metadata_name'>): Promise<void> {
    const names = [files.image_name, files.thumb_name, files.html_name, files.markdown_name, files.metadata_name].filter((n): n is string => Boolean(n));
    await Promise.allSettled(names.map((n) => this.store.delete(n)));
  }
}
