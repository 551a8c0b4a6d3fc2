/**
 * The Stellar scheme adapters for today's stock x402 packages (issue #30), on the registry's @x402/stellar 2.9
 * schemes: they add only the members 2.27 asks for, keep everything the stock scheme does, and never change it.
 * The payments they make through @x402/express, @x402/hono and @x402/fetch 2.27 are in test/e2e/x402-*.test.ts.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { createEd25519Signer, USDC_PUBNET_ADDRESS, USDC_TESTNET_ADDRESS } from '@x402/stellar';
import { ExactStellarScheme as ExactStellarServer } from '@x402/stellar/exact/server';
import { ExactStellarScheme as ExactStellarClient } from '@x402/stellar/exact/client';
import { STELLAR_DEFAULT_ASSETS, adaptStellarClientScheme, adaptStellarServerScheme } from '../src';

describe('adaptStellarServerScheme', () => {
  it(
    'adds defaultAssetTransferMethod and the ' +
      'authorization/upfront flows, and leaves the stock scheme ' +
      'unchanged',
    () => {
      const stock = new ExactStellarServer();
      const adapted = adaptStellarServerScheme(stock);
      expect(adapted.scheme).toBe('exact');
      expect(adapted.defaultAssetTransferMethod).toBe('default');
      expect(adapted.paymentFlows).toEqual({
        default: { supported: ['authorization', 'upfront'], default: 'authorization' },
      });
      expect(Object.getPrototypeOf(adapted)).toBe(stock);
      expect('paymentFlows' in stock).toBe(false);
      expect('defaultAssetTransferMethod' in stock).toBe(false);
    },
  );

  it('prices like the stock scheme, its money parsers included, through the wrapper', async () => {
    const adapted = adaptStellarServerScheme(new ExactStellarServer());
    expect(await adapted.parsePrice('$0.01', 'stellar:testnet')).toEqual(
      await new ExactStellarServer().parsePrice('$0.01', 'stellar:testnet'),
    );
    expect(
      adapted.registerMoneyParser(async (amount) => (amount > 100 ? { amount: '1', asset: 'CUSTOM' } : null)),
    ).toBe(adapted);
    expect(await adapted.parsePrice('$500', 'stellar:testnet')).toMatchObject({ amount: '1', asset: 'CUSTOM' });
    const enhanced = await adapted.enhancePaymentRequirements(
      {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: USDC_TESTNET_ADDRESS,
        amount: '1',
        payTo: 'G',
        maxTimeoutSeconds: 60,
        extra: { paymentFlow: 'upfront' },
      },
      { x402Version: 2, scheme: 'exact', network: 'stellar:testnet', extra: { areFeesSponsored: true } },
      [],
    );
    expect(enhanced.extra).toEqual({ paymentFlow: 'upfront', areFeesSponsored: true });
  });

  it('keeps the members a scheme already declares (a future @x402/stellar)', () => {
    const own = { supported: ['authorization'], default: 'authorization' };
    const future = Object.assign(new ExactStellarServer(), {
      defaultAssetTransferMethod: 'sep41',
      paymentFlows: { sep41: own },
    });
    const adapted = adaptStellarServerScheme(future);
    expect(adapted.defaultAssetTransferMethod).toBe('sep41');
    expect(adapted.paymentFlows).toEqual({ sep41: own });
  });
});

describe('adaptStellarClientScheme', () => {
  const signer = createEd25519Signer(Keypair.random().secret(), 'stellar:testnet');

  it('recognizes Circle USDC on testnet and pubnet (7 decimals) and nothing else', () => {
    const adapted = adaptStellarClientScheme(new ExactStellarClient(signer));
    expect(adapted.findDefaultAsset(USDC_TESTNET_ADDRESS, 'stellar:testnet')).toEqual({
      asset: USDC_TESTNET_ADDRESS,
      decimals: 7,
      symbol: 'USDC',
    });
    expect(adapted.findDefaultAsset(USDC_PUBNET_ADDRESS, 'stellar:pubnet')).toEqual({
      asset: USDC_PUBNET_ADDRESS,
      decimals: 7,
      symbol: 'USDC',
    });
    expect(adapted.findDefaultAsset(USDC_TESTNET_ADDRESS, 'stellar:pubnet')).toBeUndefined();
    expect(adapted.findDefaultAsset('CUNKNOWN', 'stellar:testnet')).toBeUndefined();
    expect(STELLAR_DEFAULT_ASSETS['stellar:testnet'][0].asset).toBe(USDC_TESTNET_ADDRESS);
    expect(typeof adapted.createPaymentPayload).toBe('function');
    expect(adapted.scheme).toBe('exact');
  });

  it("takes the buyer's own table of default assets", () => {
    const adapted = adaptStellarClientScheme(new ExactStellarClient(signer), {
      'stellar:testnet': [{ asset: 'CEURC', decimals: 7, symbol: 'EURC' }],
    });
    expect(adapted.findDefaultAsset('CEURC', 'stellar:testnet')).toEqual({
      asset: 'CEURC',
      decimals: 7,
      symbol: 'EURC',
    });
    expect(adapted.findDefaultAsset(USDC_TESTNET_ADDRESS, 'stellar:testnet')).toBeUndefined();
  });
});
