import { formatAmount, toStroops, type Stroops } from '../../src/domain/amount';
import { DomainError } from '../../src/domain/errors';
import { DEFAULT_USDC_ISSUER, NetworkRegistry, TESTNET_PASSPHRASE } from '../../src/domain/network-registry';
import { amountColumn, stroopsColumn } from '../../src/data/amount-column';
import { v1Payload, v1Requirements } from '../../src/http/v1-payment-terms';
import { translate, type X402Payload, type X402Requirements } from '../../src/http/x402/translate';
import { presentPayment } from '../../src/http/presenters';
import type { PaymentAttempt } from '../../src/domain/payments/types';

/**
 * Amounts inside the domain are Stroops; each face and the data layer convert once at their edge (no database, no
 * network: pure conversions). What goes out is byte-identical to what the API always wrote.
 */
const ISSUER = DEFAULT_USDC_ISSUER['stellar:testnet'];
const PAY_TO = 'GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3';
const networks = new NetworkRegistry([
  {
    network: 'stellar:testnet',
    passphrase: TESTNET_PASSPHRASE,
    rpcUrl: null,
    assets: [{ code: 'USDC', issuer: ISSUER }],
    settlementEnabled: true,
  },
]);
const usdc = networks.get('stellar:testnet')!.assets[0];

function v1Terms(amount: string) {
  const payload = {
    scheme: 'exact' as const,
    network: 'stellar:testnet' as const,
    asset: { code: 'USDC', issuer: ISSUER },
    amount,
    payTo: PAY_TO,
    expiresAtLedger: 100,
    authorization: { format: 'sorobanAuthorizationEntry' as const, xdr: 'AAAA' },
  };
  return {
    payload,
    requirements: { scheme: 'exact' as const, network: 'stellar:testnet' as const, amount, payTo: PAY_TO },
  };
}

describe('/v1 face: a decimal amount from the wire becomes Stroops once', () => {
  it.each([
    ['0.01', 100000n],
    ['12.5', 125000000n],
    ['0.0000001', 1n],
    ['999999999999.9999999', 10n ** 19n - 1n],
  ])('%s becomes %s stroops and is written back as the same string', (wire, expected) => {
    const { payload, requirements } = v1Terms(wire);
    expect(v1Payload(networks, payload).amount).toBe(expected);
    expect(v1Requirements(networks, requirements).amount).toBe(expected);
    expect(formatAmount(v1Payload(networks, payload).amount!)).toBe(wire);
  });

  it('an amount with trailing zeros ("0.0100000") comes back in the shortest form, as the API always wrote it', () => {
    expect(formatAmount(v1Payload(networks, v1Terms('0.0100000').payload).amount!)).toBe('0.01');
  });

  it('a payload amount that is not an amount becomes null (the declared-terms rule refuses it)', () => {
    expect(v1Payload(networks, v1Terms('1e3').payload).amount).toBeNull();
  });

  it('a required amount that is not an amount is refused as INVALID_PAYMENT_PAYLOAD, as the domain did', () => {
    expect(() => v1Requirements(networks, v1Terms('-1').requirements)).toThrow(DomainError);
    expect(() => v1Requirements(networks, v1Terms('-1').requirements)).toThrow(
      'The required amount must be a positive decimal',
    );
  });
});

describe('/v1 face: an asset named by code and issuer is resolved to its contract id once', () => {
  it('a registered asset carries its contract id; one not configured on the network carries none', () => {
    const { payload, requirements } = v1Terms('0.01');
    expect(v1Payload(networks, payload).asset).toEqual({ code: 'USDC', issuer: ISSUER, contractId: usdc.contractId });
    const eurc = { ...payload, asset: { code: 'EURC', issuer: ISSUER } };
    expect(v1Payload(networks, eurc).asset).toEqual({ code: 'EURC', issuer: ISSUER, contractId: null });
    expect(v1Requirements(networks, requirements).asset).toBeUndefined();
  });
});

describe('/x402 face: an atomic amount from the wire becomes Stroops once', () => {
  const requirements: X402Requirements = {
    scheme: 'exact',
    network: 'stellar:testnet',
    asset: usdc.contractId,
    amount: '2500000',
    payTo: PAY_TO,
  };
  const payload = (acceptedAmount: string | undefined): X402Payload => ({
    x402Version: 2,
    accepted: { ...requirements, amount: acceptedAmount as string },
    payload: { transaction: 'AAAA' },
  });
  const read = { decoded: null, failure: null, payer: undefined };

  it('the required and accepted atomic amounts are the same Stroops, and go back out as the same atomic string', () => {
    const t = translate(payload('2500000'), requirements, networks, read);
    expect(t.paymentRequirements.amount).toBe(2500000n);
    expect(t.paymentPayload.amount).toBe(2500000n);
    expect(t.paymentRequirements.amount.toString()).toBe(requirements.amount);
  });

  it('an accepted amount beyond any amount is null (refused by the declared-terms rule), not cut', () => {
    expect(translate(payload('99999999999999999999'), requirements, networks, read).paymentPayload.amount).toBeNull();
  });

  it('an accepted amount that is not digits is the required one (as before: the signed transfer is judged)', () => {
    expect(translate(payload(undefined), requirements, networks, read).paymentPayload.amount).toBe(2500000n);
  });
});

describe('data layer: an amount column becomes Stroops once', () => {
  it('PostgreSQL\'s "0.0100000" is 100000 stroops, written back as "0.0100000"', () => {
    expect(stroopsColumn('0.0100000')).toBe(100000n);
    expect(amountColumn(stroopsColumn('0.0100000'))).toBe('0.0100000');
    expect(amountColumn(toStroops('12.5'))).toBe('12.5000000');
  });

  it('a payment read from a row is presented with the decimal string the API always wrote', () => {
    const attempt = { amount: stroopsColumn('0.2500000'), createdAt: new Date(0), updatedAt: new Date(0) };
    expect(presentPayment(attempt as PaymentAttempt).amount).toBe('0.25');
    expect(presentPayment({ ...attempt, amount: 0n as Stroops } as PaymentAttempt).amount).toBe('0');
  });
});
