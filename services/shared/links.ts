/** Public URLs the service hands out, built from APP_URL and CDN_URL in one place. */
import type { Config } from './config';

/** A configuration's embed URL: its latest image, without a key. */
export function embedUrl(config: Pick<Config, 'appUrl'>, configId: string): string {
  return `${config.appUrl}/embed/${configId}`;
}

/** The public link of a stored file ('' when there is none). */
export function cdnLink(config: Pick<Config, 'cdnUrl'>, name: string | null): string {
  return name ? `${config.cdnUrl}/${name}` : '';
}
