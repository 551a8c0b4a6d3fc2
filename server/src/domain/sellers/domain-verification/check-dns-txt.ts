import { DNS_TXT_VALUE_PREFIX, dnsTxtName } from './challenge';
import { DomainCheckError } from './errors';
import type { DomainCheckInput, DomainCheckPorts } from './ports';

/**
 * A TXT record at _marketplace-verification.<domain> reads marketplace-verification=<token>. A record longer than
 * 255 bytes arrives as several chunks, which are joined without separators (RFC 7208 style).
 */
export async function checkDnsTxt(input: DomainCheckInput, resolveTxt: DomainCheckPorts['resolveTxt']): Promise<void> {
  const name = dnsTxtName(input.domain);
  const records = (await resolveTxt(name)).map((chunks) => chunks.join('').trim());
  if (records.length === 0) throw new DomainCheckError('record_missing', `There is no TXT record at ${name}`);
  const expected = `${DNS_TXT_VALUE_PREFIX}${input.token}`;
  if (!records.includes(expected)) {
    throw new DomainCheckError(
      'token_mismatch',
      `No TXT record at ${name} equals ${DNS_TXT_VALUE_PREFIX}<token> for this challenge`,
    );
  }
}
