import fs from 'node:fs';
import path from 'node:path';
import { verifyAttestation as sellerVerify, verifySellerReceipt } from '../src';
import { verifyAttestation as buyerVerify } from '../../sdk-buyer/src';
import {
  canonicalJson,
  createReceiptSigner,
  generateReceiptKeyPem,
  publicJwkOfPem,
} from '../../server/src/domain/receipts/receipt-signer';
import { CompactSign } from 'jose';
import { createPrivateKey } from 'node:crypto';

const claims = {
  network: 'stellar:testnet',
  transaction: '3389e9f0f1a65f19736cacf544c2e825313e8447f569233bb8db39aa607c8889',
  ledger: 1234,
  asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  amount: '2500000',
  payer: 'GBUKOFF6FX6767LKKOD3P7KAS43I3Z7CNUBPCVHUVBCG2ZSXH2JMNAX6',
  payTo: 'GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3',
  issuedAt: 1_790_000_000,
  resource: { id: 'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T', url: 'https://weather.example.com/v1/forecast/porto' },
};

describe('offline verification of the facilitator attestation', () => {
  it(
    "the buyer and seller packages ship identical copies of the verifiers (the seller's is generated: the source " +
      'behind a header naming it)',
    () => {
      const buyer = path.resolve(__dirname, '../../sdk-buyer/src/receipts');
      const seller = path.resolve(__dirname, '../src/receipts');
      const files = fs.readdirSync(buyer).sort();
      expect(fs.readdirSync(seller).sort()).toEqual(files);
      for (const f of files) {
        const copy = fs.readFileSync(path.join(seller, f), 'utf8');
        expect(copy.startsWith(`/**\n * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/receipts/${f}, `)).toBe(
          true,
        );
        expect(copy.slice(copy.indexOf(' */\n') + 4)).toBe(fs.readFileSync(path.join(buyer, f), 'utf8'));
      }
    },
  );

  it(
    'an attestation signed by the service verifies with its JWK Set in both SDKs; a tampered one does not; a ' +
      'seller receipt verifier refuses it',
    async () => {
      const signer = await createReceiptSigner({ privateKeyPem: generateReceiptKeyPem() });
      const jws = await signer.sign(claims);
      const jwks = signer.jwks();
      for (const verify of [sellerVerify, buyerVerify]) {
        expect(await verify(jws, jwks)).toEqual({
          valid: true,
          kid: signer.kid,
          payload: { kind: 'facilitator-attestation', version: 1, ...claims },
        });
      }
      const [header, payload, signature] = jws.split('.');
      const forged = Buffer.from(
        JSON.stringify({
          kind: 'facilitator-attestation',
          version: 1,
          ...claims,
          payer: 'GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3',
        }),
      ).toString('base64url');
      expect(await sellerVerify(`${header}.${forged}.${signature}`, jwks)).toEqual({
        valid: false,
        reason: 'bad_signature',
      });
      const bytes = Buffer.from(signature, 'base64url');
      bytes[0] ^= 0x01;
      const flipped = bytes.toString('base64url');
      expect((await buyerVerify(`${header}.${payload}.${flipped}`, jwks)).valid).toBe(false);
      expect(await sellerVerify('not-a-jws', jwks)).toEqual({ valid: false, reason: 'malformed' });
      // Not a seller receipt: the offer-and-receipt verifier finds no receipt payload in it.
      expect(
        await verifySellerReceipt({ format: 'jws', signature: jws }, jwks, {
          network: 'stellar:testnet',
          url: 'https://shop.example/paid',
          amount: '1',
          asset: 'C',
          payTo: 'G',
        }),
      ).toEqual({ valid: false, reason: 'bad_payload' });
    },
  );

  it(
    'after a rotation the old key stays listed, so old ' + 'attestations keep verifying; another key set refuses them',
    async () => {
      const oldPem = generateReceiptKeyPem();
      const oldSigner = await createReceiptSigner({ privateKeyPem: oldPem });
      const old = await oldSigner.sign(claims);
      const rotated = await createReceiptSigner({
        privateKeyPem: generateReceiptKeyPem(),
        previous: [await publicJwkOfPem(oldPem)],
      });
      expect(rotated.jwks().keys.map((k) => k.kid)).toEqual([rotated.kid, oldSigner.kid]);
      expect(await buyerVerify(old, rotated.jwks())).toMatchObject({ valid: true, kid: oldSigner.kid });
      const stranger = await createReceiptSigner({ privateKeyPem: generateReceiptKeyPem() });
      expect(await buyerVerify(old, stranger.jwks())).toEqual({ valid: false, reason: 'unknown_key' });
      expect(JSON.stringify(rotated.jwks())).not.toMatch(/"d"/);
    },
  );

  it(
    'the server signs with the one attestation definition the SDKs verify: its copies in server/src/domain/receipts ' +
      'are the SDK source behind a header, and an attestation with fees verifies with the fees it carries',
    async () => {
      for (const f of ['attestation.ts', 'jws.ts']) {
        const copy = fs.readFileSync(path.resolve(__dirname, '../../server/src/domain/receipts', f), 'utf8');
        expect(copy.startsWith(`/**\n * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/receipts/${f}, `)).toBe(
          true,
        );
        expect(copy.slice(copy.indexOf(' */\n') + 4)).toBe(
          fs.readFileSync(path.resolve(__dirname, '../../sdk-buyer/src/receipts', f), 'utf8'),
        );
      }
      const signer = await createReceiptSigner({ privateKeyPem: generateReceiptKeyPem() });
      const fees = { inclusion: '200', resource: '51234', percentile: 'p90' };
      const checked = await sellerVerify(await signer.sign({ ...claims, fees }), signer.jwks());
      expect(checked).toEqual({
        valid: true,
        kid: signer.kid,
        payload: { kind: 'facilitator-attestation', version: 1, ...claims, fees },
      });
    },
  );

  it(
    'an attestation-shaped document whose fees or resource are not what an attestation holds (numbers, a bare ' +
      'string) is refused as bad_payload even under a valid signature',
    async () => {
      const pem = generateReceiptKeyPem();
      const signer = await createReceiptSigner({ privateKeyPem: pem });
      const signOdd = (extra: Record<string, unknown>) =>
        new CompactSign(
          new TextEncoder().encode(canonicalJson({ kind: 'facilitator-attestation', version: 1, ...claims, ...extra })),
        )
          .setProtectedHeader({ alg: 'EdDSA', kid: signer.kid, typ: 'x402-facilitator-attestation' })
          .sign(createPrivateKey(pem));
      for (const odd of [
        { fees: { inclusion: 200, resource: 51234, percentile: 90 } },
        { fees: 'p90' },
        { resource: 'https://weather.example.com/v1/forecast/porto' },
      ]) {
        expect(await buyerVerify(await signOdd(odd), signer.jwks())).toEqual({ valid: false, reason: 'bad_payload' });
      }
    },
  );
});
