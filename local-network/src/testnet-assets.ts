import { Asset, Networks } from '@stellar/stellar-sdk';

/** Circle's USDC issuer on testnet (a public account id; the service's default too: domain/network-registry.ts). */
export const TESTNET_USDC_ISSUER = 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5';

/**
 * Circle's testnet USDC, the asset the local network hosts by default so that it is testnet's twin: resources,
 * payment requirements and stock x402 defaults written for testnet validate and pay here unchanged. The issuer is
 * testnet's own (the service configures the same one by default, and passes its configured testnet assets when it
 * starts the network in process; a test keeps the two equal); the SAC contract id is derived with the Stellar SDK
 * from code, issuer and the testnet passphrase, exactly as the ledger derives it.
 */
export const TESTNET_USDC = {
  code: 'USDC',
  issuer: TESTNET_USDC_ISSUER,
  contractId: new Asset('USDC', TESTNET_USDC_ISSUER).contractId(Networks.TESTNET),
} as const;
