import http from 'node:http';
import type { LocalNetwork } from '@paid-api-marketplace/local-network';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../../support/fixtures';

/** An answer as a storm test tallies it: status and parsed body (a non-JSON body is named in `error.code`). */
export type Answer = {
  status: number;
  body: { ok?: boolean; status?: string; evidence?: string; error?: { code?: string } };
};

/**
 * One JSON POST through a shared keep-alive agent. A connection error resolves as status 0 with the error in
 * `error.code` (a storm tallies it rather than aborting); the 120 s socket timeout is only a bound against a hang.
 */
export function postJson(agent: http.Agent, url: string, body: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        timeout: 120_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Answer['body'] });
          } catch {
            resolve({ status: res.statusCode ?? 0, body: { error: { code: `not JSON: ${text.slice(0, 100)}` } } });
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (err) => resolve({ status: 0, body: { error: { code: `client: ${err.message}` } } }));
    req.end(body);
  });
}

/**
 * Through a running service's HTTP API: a seller signs up (wallet proof), its wallet gets a USDC trustline on the
 * local network, and it creates one resource priced `amount` USDC. Returns the seller, the resource id and payTo.
 */
export async function sellerWithResourceOverHttp(
  baseUrl: string,
  network: LocalNetwork,
  amount = '0.25',
): Promise<{ seller: SignedUpSeller; resourceId: string; payTo: string }> {
  const usdc = network.assets.find((a) => a.code === 'USDC')!;
  const seller = await signUpSeller(baseUrl as never);
  await network.fundAccount(seller.wallet.publicKey());
  await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
  const created = await fetch(`${baseUrl}/v1/resources`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(seller.apiKey) },
    body: JSON.stringify(resourceInput(seller, { assetIssuer: usdc.issuer, amount })),
  });
  if (created.status !== 201)
    throw new Error(`creating the resource answered ${created.status}: ${(await created.text()).slice(0, 300)}`);
  const body = (await created.json()) as { resource?: { id: string }; id?: string };
  return { seller, resourceId: (body.resource?.id ?? body.id) as string, payTo: seller.wallet.publicKey() };
}

/**
 * What a storm of N settles of one payment must answer: exactly one success (200, or 202 while pending) and N - 1
 * `409 REPLAY_DETECTED` in the envelope; anything else (a 5xx, a client timeout, a second success) is tallied by
 * status and code so a failure names it.
 */
export function stormTally(answers: Answer[]): { successes: number; replays: number; others: Record<string, number> } {
  const successes = answers.filter((r) => r.status === 200 || r.status === 202);
  const replays = answers.filter(
    (r) => r.status === 409 && r.body.ok === false && r.body.error?.code === 'REPLAY_DETECTED',
  );
  const others = answers.filter((r) => !successes.includes(r) && !replays.includes(r));
  const tally = others.reduce<Record<string, number>>((acc, r) => {
    const k = `${r.status} ${r.body.error?.code ?? r.body.status ?? ''}`;
    acc[k] = (acc[k] ?? 0) + 1;
    return acc;
  }, {});
  return { successes: successes.length, replays: replays.length, others: tally };
}
