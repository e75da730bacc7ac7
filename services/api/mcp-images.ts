/**
 * The image an MCP tool hands an agent (docs/mcp.md, "The image"): a capture as the agent's
 * model can take it. Models accept images of a bounded size and scale larger ones down
 * themselves (Anthropic's models to 1568 px on the long edge and about 1.15 megapixels), so
 * a larger capture is scaled down here, where it costs nothing, instead of sending megabytes
 * an agent host may refuse. A capture that already fits is sent as it is.
 */
import sharp from 'sharp';

/** The longest edge, in pixels, of an image sent to an agent. */
export const AGENT_IMAGE_MAX_EDGE = 1568;
/** The most pixels (width × height) of an image sent to an agent. */
export const AGENT_IMAGE_MAX_PIXELS = 1_150_000;
/** The largest file sent as it is; a larger one is re-encoded (even when its size fits). */
export const AGENT_IMAGE_MAX_BYTES = 1_000_000;
/** JPEG quality of a scaled or re-encoded image. */
const JPEG_QUALITY = 80;

/** Formats sent as they are when they fit (what agents' models read). */
const AS_IS: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

export interface AgentImage {
  /** Base64, as MCP image content carries it. */
  data: string;
  mimeType: string;
  width: number;
  height: number;
  /** The capture's own size and format. */
  original: { width: number; height: number; format: string };
  /** Scaled or re-encoded (not the capture's own bytes). */
  converted: boolean;
}

/** The scale that brings width × height within the edge and pixel limits (1 when it fits). */
export function agentScale(width: number, height: number): number {
  return Math.min(1, AGENT_IMAGE_MAX_EDGE / Math.max(width, height), Math.sqrt(AGENT_IMAGE_MAX_PIXELS / (width * height)));
}

/**
 * The capture as an agent's image, or null when it is not an image (a PDF). A capture that
 * fits the limits in a format agents read is sent as it is; any other is scaled to fit and
 * encoded as JPEG.
 */
export async function imageForAgent(bytes: Buffer, contentType: string): Promise<AgentImage | null> {
  if (!contentType.startsWith('image/')) return null;
  const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const format = meta.format ?? 'unknown';
  if (width === 0 || height === 0) return null;
  const original = { width, height, format };
  const scale = agentScale(width, height);
  const mimeType = AS_IS[format];
  if (scale === 1 && mimeType && bytes.length <= AGENT_IMAGE_MAX_BYTES) {
    return { data: bytes.toString('base64'), mimeType, width, height, original, converted: false };
  }
  const { data, info } = await sharp(bytes, { limitInputPixels: false })
    .resize({ width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)), fit: 'fill' })
    .flatten({ background: '#ffffff' })
    .jpeg({ quality: JPEG_QUALITY, mozjpeg: true })
    .toBuffer({ resolveWithObject: true });
  return { data: data.toString('base64'), mimeType: 'image/jpeg', width: info.width, height: info.height, original, converted: true };
}
