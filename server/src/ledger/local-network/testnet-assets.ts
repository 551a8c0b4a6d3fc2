import { Asset, Networks } from '@stellar/stellar-sdk';
import { DEFAULT_USDC_ISSUER } from '../../domain/network-registry';

/**
 * Circle's testnet USDC, the asset the local network hosts by default so that it is testnet's twin: resources,
 * payment requirements and stock x402 defaults written for testnet validate and pay here unchanged. The issuer is
 * the configured default (config.ts, one place); the SAC contract id is derived with the Stellar SDK from code,
 * issuer and the testnet passphrase, exactly as the ledger derives it.
 */
export const TESTNET_USDC = {
  code: 'USDC',
  issuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
  contractId: new Asset('USDC', DEFAULT_USDC_ISSUER['stellar:testnet']).contractId(Networks.TESTNET),
} as const;
