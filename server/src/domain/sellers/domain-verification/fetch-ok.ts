import { DomainCheckError } from './errors';
import type { DomainCheckPorts } from './ports';

/** Fetches a verification URL and insists on a plain 200: a 3xx fails with `redirect`, anything else `http_status`. */
export async function fetchOk(fetchText: DomainCheckPorts['fetchText'], url: string): Promise<string> {
  const { status, body } = await fetchText(url);
  if (status >= 300 && status < 400) {
    throw new DomainCheckError(
      'redirect',
      `${url} answered ${status} (a redirect); redirects are not followed, serve the file at this URL`,
    );
  }
  if (status !== 200) throw new DomainCheckError('http_status', `${url} answered ${status}, expected 200`);
  return body;
}
