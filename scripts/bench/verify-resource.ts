/**
 * The cataloged resource the verify benches pay for (bench:verify, bench:verify-ab): created through the API with the
 * seller's key, so every payment names it by id and verify judges it against its terms.
 */
import type { Keypair } from '@stellar/stellar-sdk';
import type { HttpClient } from './load';
import type { NetworkAsset, NetworkProcess } from './processes';
import { signedVerifyBody, type VerifyBody } from './payments';

/** The POST /v1/resources body of a bench's paid endpoint (`https://<host>/v1/echo` on testnet terms). */
export function benchResourceInput(r: {
  sellerId: string;
  name: string;
  description: string;
  host: string;
  payTo: string;
  asset: NetworkAsset;
  amount: string;
}) {
  return {
    sellerId: r.sellerId,
    type: 'http',
    name: r.name,
    description: r.description,
    url: `https://${r.host}/v1/echo`,
    routeTemplate: '/v1/echo',
    network: 'stellar:testnet',
    payTo: r.payTo,
    assetCode: r.asset.code,
    assetIssuer: r.asset.issuer,
    amount: r.amount,
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    extensions: {},
  };
}

export async function createBenchResource(
  api: HttpClient,
  seller: { sellerId: string; apiKey: string },
  payTo: string,
  asset: NetworkAsset,
  amount: string,
): Promise<string> {
  const created = await api.json<{ id: string }>(
    'POST',
    '/v1/resources',
    benchResourceInput({
      sellerId: seller.sellerId,
      name: 'Bench resource',
      description: 'A paid endpoint for the benchmark',
      host: 'bench.example.com',
      payTo,
      asset,
      amount,
    }),
    { authorization: `Bearer ${seller.apiKey}` },
  );
  if (created.status !== 201)
    throw new Error(`creating the bench resource answered ${created.status}: ${JSON.stringify(created.body)}`);
  return created.body.id;
}

/** The bench resource's payments: `n` signed POST /v1/verify bodies, the buyers in turn, valid `ledgers` ledgers. */
export function verifySigner(
  net: NetworkProcess,
  asset: NetworkAsset,
  buyers: Keypair[],
  terms: { payTo: string; resourceId: string; amount: string; stroops: bigint },
) {
  return async (n: number, ledgers: number, corruptSignature = false, onSigned?: (count: number) => void) => {
    const expiration = (await net.latestLedger()) + ledgers;
    const out: VerifyBody[] = [];
    for (let i = 0; i < n; i++) {
      out.push(
        await signedVerifyBody({
          passphrase: net.passphrase,
          asset,
          buyer: buyers[i % buyers.length],
          ...terms,
          expiration,
          corruptSignature,
        }),
      );
      onSigned?.(i + 1);
    }
    return out;
  };
}
