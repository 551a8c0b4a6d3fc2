/**
 * The paywall writes its price in stroops with the one amounts module (src/core/amounts.ts, generated from the
 * buyer SDK's source): exactly, and never by cutting an amount to 7 decimals, which its own converter used to do.
 */
import { createSellerClient, paywall } from '../src';
import { paymentRequiredFor } from '../src/paywall/paywall';

const terms = (amount: string) => ({
  scheme: 'exact' as const,
  network: 'stellar:testnet',
  amount,
  payTo: 'GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3',
  asset: {
    code: 'USDC',
    issuer: 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5',
    contractId: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  },
  maxTimeoutSeconds: 60,
});
const resource = { url: 'https://weather.example.com/v1/forecast', description: '', mimeType: 'application/json' };

describe('the paywall price in stroops', () => {
  it('when the price is 0.25, the 402 asks for exactly 2500000 stroops', () => {
    const pr = paymentRequiredFor(
      terms('0.25') as never,
      'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T',
      resource,
      'PAYMENT_REQUIRED',
    );
    expect(pr.accepts[0]).toMatchObject({ amount: '2500000', extra: { amount: '0.25' } });
  });

  it(
    'when a price has more than 7 decimals, the 402 is refused with a RangeError instead of asking for a ' +
      'truncated amount',
    () => {
      expect(() =>
        paymentRequiredFor(
          terms('0.12345678') as never,
          'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T',
          resource,
          'PAYMENT_REQUIRED',
        ),
      ).toThrow('"0.12345678" has 8 decimals');
    },
  );

  it(
    'when paywall() is given requirements with more than 7 decimals, it refuses them at creation, before any ' +
      'request',
    () => {
      const client = createSellerClient({ baseUrl: 'http://127.0.0.1:9' });
      const { contractId: _unused, ...asset } = terms('0').asset;
      expect(() =>
        paywall({
          client,
          resourceId: 'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T',
          requirements: { ...terms('0.12345678'), asset } as never,
        }),
      ).toThrow(
        'paywall: requirements.amount: "0.12345678" has 8 decimals: Stellar amounts have at most 7, and an ' +
          'amount is never rounded',
      );
    },
  );
});
