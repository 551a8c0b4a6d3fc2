import { STELLAR_TOML_PATH, STELLAR_TOML_TOKEN_KEY } from './challenge';
import { DomainCheckError } from './errors';
import { fetchOk } from './fetch-ok';
import type { DomainCheckInput, DomainCheckPorts } from './ports';
import { parseStellarTomlTopLevel } from './stellar-toml-parser';

/**
 * SEP-1: the domain's stellar.toml lists the seller's wallet in ACCOUNTS and carries
 * MARKETPLACE_VERIFICATION = "<token>". Resolves when verified, throws DomainCheckError otherwise.
 */
export async function checkStellarToml(
  input: DomainCheckInput,
  fetchText: DomainCheckPorts['fetchText'],
  origin: string,
): Promise<void> {
  const url = `${origin}${STELLAR_TOML_PATH}`;
  const values = parseStellarTomlTopLevel(await fetchOk(fetchText, url));

  const accounts = values.get('ACCOUNTS');
  if (!Array.isArray(accounts) || !accounts.includes(input.walletAddress)) {
    throw new DomainCheckError(
      'account_missing',
      `The top-level ACCOUNTS array in ${url} does not list ${input.walletAddress}`,
    );
  }
  const published = values.get(STELLAR_TOML_TOKEN_KEY);
  if (published === undefined) {
    throw new DomainCheckError('token_mismatch', `${url} has no top-level ${STELLAR_TOML_TOKEN_KEY}`);
  }
  if (published !== input.token) {
    throw new DomainCheckError(
      'token_mismatch',
      `${STELLAR_TOML_TOKEN_KEY} in ${url} does not match the challenge token`,
    );
  }
}
