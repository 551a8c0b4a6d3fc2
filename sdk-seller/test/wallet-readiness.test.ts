/**
 * Issue #22, seller readiness: `checkWalletReadiness` tells in one call whether a wallet can be paid in every asset
 * the marketplace accepts (account exists, trustline held), against the real service and the local network.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { checkWalletReadiness } from '../src';
import { startMarketplace, type Marketplace } from '../../test/support/marketplace';

describe('checkWalletReadiness', () => {
  let m: Marketplace;
  beforeAll(async () => {
    m = await startMarketplace();
  });
  afterAll(async () => {
    await m?.stop();
  });
  const usdc = () => m.network.assets.find((a) => a.code === 'USDC')!;

  it('when the wallet does not exist, it is not ready and the fix says to fund it and add the trustline', async () => {
    const wallet = Keypair.random().publicKey();
    const r = await checkWalletReadiness({ baseUrl: m.baseUrl, walletAddress: wallet });
    expect(r).toEqual({
      walletAddress: wallet,
      ready: false,
      checks: [
        {
          network: 'stellar:testnet',
          asset: { code: 'USDC', issuer: usdc().issuer },
          account: false,
          trustline: false,
          ready: false,
          fix:
            `The account does not exist on stellar:testnet: fund it with XLM (it needs a minimum balance), then ` +
            `add a trustline to USDC issued by ${usdc().issuer}.`,
        },
      ],
    });
  });

  it('when the wallet exists without a USDC trustline, it is not ready and the fix names the changeTrust', async () => {
    const wallet = Keypair.random().publicKey();
    await m.network.fundAccount(wallet);
    const r = await checkWalletReadiness({ baseUrl: m.baseUrl, walletAddress: wallet, network: 'stellar:testnet' });
    expect(r.ready).toBe(false);
    expect(r.checks[0]).toMatchObject({
      account: true,
      trustline: false,
      ready: false,
      fix: expect.stringContaining('Add a trustline to USDC issued by'),
    });
  });

  it('when the wallet holds the trustline, it is ready', async () => {
    const wallet = Keypair.random().publicKey();
    await m.network.faucet(wallet, 'USDC', '0.0000001');
    const r = await checkWalletReadiness({ baseUrl: m.baseUrl, walletAddress: wallet });
    expect(r).toMatchObject({ ready: true, checks: [{ account: true, trustline: true, ready: true, fix: null }] });
  });

  it('when the address is not a Stellar account, it throws before any request', async () => {
    await expect(checkWalletReadiness({ baseUrl: 'http://127.0.0.1:9', walletAddress: 'GABC' })).rejects.toThrow(
      'walletAddress must be a Stellar account address',
    );
  });
});
