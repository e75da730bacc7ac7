/**
 * The names of thumbnails made when first asked for: a random part, as every stored file
 * has (unguessable, unrelated to its image's name), then the size it is made at, so that
 * whoever makes it needs nothing but the name and the image it belongs to. The capture
 * service records the name with the screenshot; the api's CDN route, missing the file,
 * has the capture service make it (the name must be a recorded one).
 */

/** A thumbnail's size: `width` wide; cut to `height` from the top when given, else in proportion. */
export interface ThumbnailSize {
  width: number;
  height: number | null;
}

const FORMATS: Record<string, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp' };
const CONTENT_TYPES: Record<string, string> = Object.fromEntries(Object.entries(FORMATS).map(([type, ext]) => [ext, type]));
const PATTERN = /^[A-Za-z0-9]{24}-t(\d{1,5})(?:x(\d{1,5}))?\.(jpeg|png|webp)$/;

/** The name of a thumbnail of an image of `contentType` (jpeg, png, webp: its own format) at `size`; `random` is 24 letters and digits. */
export function thumbnailName(random: string, contentType: string, size: ThumbnailSize): string | null {
  const ext = FORMATS[contentType];
  if (!ext || !/^[A-Za-z0-9]{24}$/.test(random)) return null;
  return `${random}-t${size.width}${size.height ? `x${size.height}` : ''}.${ext}`;
}

/** What a thumbnail name says: its size and format; null when `name` is not such a name. */
export function parseThumbnailName(name: string): { size: ThumbnailSize; contentType: string } | null {
  const m = PATTERN.exec(name);
  if (!m) return null;
  return { size: { width: Number(m[1]), height: m[2] ? Number(m[2]) : null }, contentType: CONTENT_TYPES[m[3]!]! };
}
