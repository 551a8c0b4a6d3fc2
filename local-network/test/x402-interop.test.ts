import { Keypair } from '@stellar/stellar-sdk';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactStellarClient } from '@x402/stellar/exact/client';
import { ExactStellarScheme as ExactStellarFacilitator } from '@x402/stellar/exact/facilitator';
import { LocalNetwork, trustCertificate } from '../src';
import { fundedAccount, startTestNetwork, whileLedgersClose } from './helpers';

type Requirements = Parameters<ExactStellarFacilitator['verify']>[1];
type Payload = Parameters<ExactStellarFacilitator['verify']>[0];

describe('@x402/stellar exact scheme against the local network', () => {
  let network: LocalNetwork;
  let payer: Keypair;
  let payTo: Keypair;
  let facilitatorKey: Keypair;
  let requirements: Requirements;
  let facilitator: ExactStellarFacilitator;

  beforeAll(async () => {
    // The stock x402 client builds its AssembledTransaction without allowHttp, so it needs an HTTPS RPC URL.
    network = await startTestNetwork({ tls: true });
    trustCertificate(network.certificatePem as string);
    payer = await fundedAccount(network, '25');
    payTo = await fundedAccount(network, '0');
    await network.faucet(payTo.publicKey(), 'USDC', '0.0000001');
    facilitatorKey = await fundedAccount(network, '0');
    requirements = {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset: network.assets[0].contractId,
      amount: '12500000',
      payTo: payTo.publicKey(),
      maxTimeoutSeconds: 60,
      extra: { areFeesSponsored: true },
    };
    facilitator = new ExactStellarFacilitator([createEd25519Signer(facilitatorKey.secret(), 'stellar:testnet')], {
      rpcConfig: { url: network.rpcUrl },
    });
  });

  afterAll(() => network.stop());

  async function pay(): Promise<Payload> {
    const client = new ExactStellarClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), {
      url: network.rpcUrl,
    });
    const created = await client.createPaymentPayload(2, requirements);
    return { ...created, accepted: requirements };
  }

  it(
    'the client signs a payment, the facilitator verifies and ' + 'settles it, and balances move by exactly the amount',
    async () => {
      const payload = await pay();
      await expect(facilitator.verify(payload, requirements)).resolves.toEqual({
        isValid: true,
        payer: payer.publicKey(),
      });

      const payerBefore = network.balance(payer.publicKey(), 'USDC');
      const payToBefore = network.balance(payTo.publicKey(), 'USDC');
      const settled = await whileLedgersClose(network, facilitator.settle(payload, requirements), 250);

      expect(settled).toMatchObject({ success: true, network: 'stellar:testnet', payer: payer.publicKey() });
      expect(settled.transaction).toMatch(/^[0-9a-f]{64}$/);
      expect(payerBefore).toBe('25');
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('23.75');
      expect(payToBefore).toBe('0.0000001');
      expect(network.balance(payTo.publicKey(), 'USDC')).toBe('1.2500001');

      const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
      const again = await whileLedgersClose(network, facilitator.settle(payload, requirements), 250);
      expect(again.success).toBe(false);
      expect(again.errorReason).toBe('invalid_exact_stellar_payload_simulation_failed');
      expect(logged.mock.calls.flat().join(' ')).toMatch(
        /Error\(Auth, ExistingValue\)[\s\S]*nonce -?\d+ was already used/,
      );
      logged.mockRestore();
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('23.75');
    },
  );

  it('when the payer lacks the amount, the client cannot build the payment', async () => {
    const poor = await fundedAccount(network, '1');
    const client = new ExactStellarClient(createEd25519Signer(poor.secret(), 'stellar:testnet'), {
      url: network.rpcUrl,
    });
    await expect(client.createPaymentPayload(2, requirements)).rejects.toThrow(/Error\(Contract, #10\)/);
  });
});
