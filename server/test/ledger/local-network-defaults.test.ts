import { TESTNET_USDC } from '@paid-api-marketplace/local-network';
import { DEFAULT_USDC_ISSUER, TESTNET_PASSPHRASE } from '../../src/domain/network-registry';
import { Asset } from '@stellar/stellar-sdk';

/**
 * The local network is its own package and imports nothing of the server, so it names testnet's USDC issuer itself:
 * the service's default testnet asset and the asset the local network hosts by default must stay the same one.
 */
describe('the local network and the service agree on testnet USDC', () => {
  it('the local network hosts, by default, the USDC the service accepts on testnet by default', () => {
    expect(TESTNET_USDC.issuer).toBe(DEFAULT_USDC_ISSUER['stellar:testnet']);
    expect(TESTNET_USDC.contractId).toBe(new Asset('USDC', TESTNET_USDC.issuer).contractId(TESTNET_PASSPHRASE));
  });
});
