/**
 * The in-process benchmark environment the first benches used (service, local network and load generator in ONE
 * Node process, sharing one event loop). Kept only so that scripts/bench-settle.ts keeps working until it moves to
 * the separate processes of ./processes.ts (startBenchDatabase, startNetworkProcess, startServiceProcess with
 * STELLAR_TESTNET_CHANNEL_SECRETS). Figures measured with it understate the service: do not use it for new benches.
 */
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Address, Keypair, authorizeInvocation, nativeToScVal, xdr } from '@stellar/stellar-sdk';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../server/src/data/embedded-database';
import { migrate } from '../../server/src/data/database';
import { startLocalNetwork, type LocalNetwork } from '../../server/src/ledger/local-network';
import { createService, type Service } from '../../server/src/compose';
import { NetworkRegistry } from '../../server/src/ledger/network-registry';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from '../../server/src/config';
import { createLogger } from '../../server/src/logger';

export interface BenchEnv {
  network: LocalNetwork;
  service: Service;
  baseUrl: string;
  payTo: Keypair;
  resourceId: string;
  stop(): Promise<void>;
}

let db: EmbeddedDatabase | null = null;
let dbCounter = 0;

export async function startBenchEnv(opts: { channelAccounts: number; ledgerCloseMs: number; confirmWaitMs?: number }): Promise<BenchEnv> {
  if (!db) db = await startEmbeddedDatabase({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pg-')), persistent: false });
  const url = await db.urlFor(`bench_${process.pid}_${++dbCounter}`);
  await migrate(url);
  const network = await startLocalNetwork({ port: 0, ledgerCloseMs: opts.ledgerCloseMs });
  const networks = new NetworkRegistry([
    { network: 'stellar:testnet', passphrase: TESTNET_PASSPHRASE, rpcUrl: network.rpcUrl, settlementEnabled: true, local: true, assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })) },
    { network: 'stellar:pubnet', passphrase: PUBNET_PASSPHRASE, rpcUrl: null, settlementEnabled: false, assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }] },
  ]);
  const operatorApiKey = `mk_op_bench_${'x'.repeat(24)}`;
  const service = await createService({
    databaseUrl: url,
    environment: 'bench',
    version: 'bench',
    commit: null,
    networks,
    operatorApiKey,
    rateLimit: { points: 10_000_000, windowSeconds: 60 },
    bodyLimitBytes: 256 * 1024,
    responseValidation: false,
    logger: createLogger({ silent: true }),
    facilitator: { channelAccounts: opts.channelAccounts, confirmWaitMs: opts.confirmWaitMs ?? 60_000, pollMs: 50 },
  });
  const server = service.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // A seller with a resource; its wallet holds a USDC trustline.
  const wallet = Keypair.random();
  await network.fundAccount(wallet.publicKey());
  await network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const post = async (p: string, body: unknown, key?: string) => {
    const res = await fetch(`${baseUrl}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const seller = await post('/v1/sellers', { displayName: 'Bench seller', walletAddress: wallet.publicKey(), domain: 'bench.example.com' });
  const usdc = network.assets[0];
  const resource = await post(
    '/v1/resources',
    {
      sellerId: seller.body.seller.id,
      type: 'http',
      name: 'Bench resource',
      description: 'A paid endpoint for the benchmark',
      url: 'https://bench.example.com/v1/echo',
      routeTemplate: '/v1/echo',
      network: 'stellar:testnet',
      payTo: wallet.publicKey(),
      assetCode: usdc.code,
      assetIssuer: usdc.issuer,
      amount: '0.01',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      extensions: {},
    },
    seller.body.apiKey,
  );
  if (resource.status !== 201) throw new Error(`resource: ${resource.status} ${JSON.stringify(resource.body)}`);
  return {
    network,
    service,
    baseUrl,
    payTo: wallet,
    resourceId: resource.body.id,
    async stop() {
      await new Promise((r) => server.close(r));
      await service.close();
      await network.stop();
    },
  };
}

export async function stopDatabase(): Promise<void> {
  await db?.stop();
  db = null;
}

/** A signed exact payload paying 0.01 USDC from `buyer` to the bench seller. */
export function signedPayment(env: BenchEnv, buyer: Keypair, expiration: number) {
  const usdc = env.network.assets[0];
  return authorizeInvocation(
    buyer,
    expiration,
    new xdr.SorobanAuthorizedInvocation({
      function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
        new xdr.InvokeContractArgs({
          contractAddress: new Address(usdc.contractId).toScAddress(),
          functionName: 'transfer',
          args: [nativeToScVal(buyer.publicKey(), { type: 'address' }), nativeToScVal(env.payTo.publicKey(), { type: 'address' }), nativeToScVal(100_000n, { type: 'i128' })],
        }),
      ),
      subInvocations: [],
    }),
    buyer.publicKey(),
    env.network.networkPassphrase,
  ).then((entry) => {
    const asset = { code: usdc.code, issuer: usdc.issuer };
    return {
      paymentPayload: { scheme: 'exact', network: 'stellar:testnet', asset, amount: '0.01', payTo: env.payTo.publicKey(), expiresAtLedger: expiration, authorization: { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') } },
      paymentRequirements: { scheme: 'exact', network: 'stellar:testnet', amount: '0.01', payTo: env.payTo.publicKey(), asset },
      resourceId: env.resourceId,
    };
  });
}

export async function fundedBuyers(env: BenchEnv, n: number, usdc: string): Promise<Keypair[]> {
  const buyers = Array.from({ length: n }, () => Keypair.random());
  for (const b of buyers) {
    await env.network.fundAccount(b.publicKey());
    await env.network.faucet(b.publicKey(), 'USDC', usdc);
  }
  return buyers;
}

export async function postJson(env: BenchEnv, p: string, body: unknown, retries = 3): Promise<{ status: number; body: Record<string, any> }> {
  try {
    return await postOnce(env, p, body);
  } catch (err) {
    // A reused keep-alive socket the server just closed: the request never reached a handler, so retrying is safe.
    if (retries > 0) return postJson(env, p, body, retries - 1);
    throw err;
  }
}

async function postOnce(env: BenchEnv, p: string, body: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${env.baseUrl}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

