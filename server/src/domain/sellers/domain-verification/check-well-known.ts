import { WELL_KNOWN_PATH } from './challenge';
import { DomainCheckError } from './errors';
import { fetchOk } from './fetch-ok';
import type { DomainCheckInput, DomainCheckPorts } from './ports';

/** The file at /.well-known/marketplace-verification.txt is the token, or has a line that is exactly the token. */
export async function checkWellKnown(
  input: DomainCheckInput,
  fetchText: DomainCheckPorts['fetchText'],
  origin: string,
): Promise<void> {
  const url = `${origin}${WELL_KNOWN_PATH}`;
  const body = await fetchOk(fetchText, url);
  const found = body.trim() === input.token || body.split(/\r?\n/).some((line) => line.trim() === input.token);
  if (!found) throw new DomainCheckError('token_mismatch', `${url} does not contain the challenge token`);
}
