import request from 'supertest';
import {
  Account,
  Address,
  Keypair,
  Operation,
  TransactionBuilder,
  authorizeInvocation,
  nativeToScVal,
  xdr,
} from '@stellar/stellar-sdk';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { OPERATOR_KEY, startTestService, testNetworks, type TestService } from '../support/test-service';
import { createService, type Service } from '../../src/compose';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import type { FacilitatorOptions } from '../../src/areas/facilitator';
import { toStroops } from '../../src/domain/amount';
import { createFacilitatorArea } from '../../src/areas/facilitator';
import type { AreaContext } from '../../src/areas/area';
import { createMetrics } from '../../src/metrics/registry';
import { createLogger } from '../../src/logger';

export interface FacilitatorEnv {
  network: LocalNetwork;
  svc: TestService;
  usdc: { code: string; issuer: string; contractId: string };
  stop(): Promise<void>;
}

/** The real service on a fresh database, with the local network in-process as stellar:testnet. */
export async function startFacilitatorEnv(
  opts: {
    ledgerCloseMs?: number;
    facilitator?: FacilitatorOptions;
    assets?: string[];
    rpcUrl?: (realRpcUrl: string) => Promise<string>;
  } = {},
): Promise<FacilitatorEnv> {
  const network = await startLocalNetwork({
    port: 0,
    ledgerCloseMs: opts.ledgerCloseMs ?? 100,
    assets: (opts.assets ?? ['USDC']).map((code) => ({ code })),
  });
  const rpcUrl = opts.rpcUrl ? await opts.rpcUrl(network.rpcUrl) : network.rpcUrl;
  const svc = await startTestService({
    networks: testNetworks({ rpcUrl, assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })) }),
    // The local network's pace (its close interval) converts maxTimeoutSeconds into ledgers; manual closes: 5 s.
    facilitator: {
      channelAccounts: 2,
      pollMs: 25,
      confirmGraceMs: 10_000,
      ...((opts.ledgerCloseMs ?? 100) > 0 ? { ledgerSeconds: (opts.ledgerCloseMs ?? 100) / 1000 } : {}),
      ...opts.facilitator,
    },
  });
  const usdc = network.assets.find((a) => a.code === 'USDC')!;
  return {
    network,
    svc,
    usdc,
    async stop() {
      await svc.stop();
      await network.stop();
    },
  };
}

/** A second service process's app on the env's database and network (what another server process would be). */
export function secondService(env: FacilitatorEnv, facilitator?: FacilitatorOptions): Promise<Service> {
  return createService({
    databaseUrl: env.svc.databaseUrl,
    environment: 'test',
    version: '0.0.0-test',
    commit: null,
    networks: testNetworks({
      rpcUrl: env.network.rpcUrl,
      assets: env.network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    operatorApiKey: OPERATOR_KEY,
    rateLimit: { points: 1_000_000, windowSeconds: 60 },
    bodyLimitBytes: 256 * 1024,
    responseValidation: true,
    logger: createLogger({ silent: !process.env.TEST_LOGS }),
    ...(facilitator ? { facilitator } : {}),
  });
}

export async function fundedBuyer(env: FacilitatorEnv, usdc = '10'): Promise<Keypair> {
  const k = Keypair.random();
  await env.network.fundAccount(k.publicKey());
  if (usdc !== '0') await env.network.faucet(k.publicKey(), 'USDC', usdc);
  return k;
}

/** A seller whose wallet exists on the local network with a USDC trustline, and one cataloged resource. */
export async function sellerWithResource(
  env: FacilitatorEnv,
  amount = '0.25',
): Promise<{ seller: SignedUpSeller; resource: { id: string; versionId: string; url: string } }> {
  const seller = await signUpSeller(env.svc.app);
  await env.network.fundAccount(seller.wallet.publicKey());
  await env.network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
  const res = await request(env.svc.app)
    .post('/v1/resources')
    .set(bearer(seller.apiKey))
    .send(resourceInput(seller, { assetIssuer: env.usdc.issuer, amount }));
  if (res.status !== 201) throw new Error(`resource create failed: ${res.status} ${JSON.stringify(res.body)}`);
  const body = res.body.resource ?? res.body;
  return { seller, resource: { id: body.id, versionId: body.versionId, url: body.url } };
}

export interface SignOptions {
  env: FacilitatorEnv;
  buyer: Keypair;
  payTo: string;
  amount: string;
  /** Default the USDC contract. */
  contractId?: string;
  expiration?: number;
  /** Sign with this key instead of the buyer's (bad signature). */
  signer?: Keypair;
  passphrase?: string;
}

/** A signed SorobanAuthorizationEntry for SAC transfer(buyer, payTo, amount), built the way x402 clients sign it. */
export async function signTransfer(o: SignOptions): Promise<xdr.SorobanAuthorizationEntry> {
  const invocation = new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
      new xdr.InvokeContractArgs({
        contractAddress: new Address(o.contractId ?? o.env.usdc.contractId).toScAddress(),
        functionName: 'transfer',
        args: [
          nativeToScVal(o.buyer.publicKey(), { type: 'address' }),
          nativeToScVal(o.payTo, { type: 'address' }),
          nativeToScVal(toStroops(o.amount), { type: 'i128' }),
        ],
      }),
    ),
    subInvocations: [],
  });
  const expiration = o.expiration ?? o.env.network.latestLedger() + 50;
  return authorizeInvocation(
    o.signer ?? o.buyer,
    expiration,
    invocation,
    o.buyer.publicKey(),
    o.passphrase ?? o.env.network.networkPassphrase,
  );
}

/** The transaction envelope form stock x402 Stellar clients send: one invokeHostFunction op carrying the entry. */
export function asTransactionXdr(env: FacilitatorEnv, buyer: Keypair, entry: xdr.SorobanAuthorizationEntry): string {
  const call = entry.rootInvocation().function().contractFn();
  const func = xdr.HostFunction.hostFunctionTypeInvokeContract(
    new xdr.InvokeContractArgs({
      contractAddress: call.contractAddress(),
      functionName: call.functionName(),
      args: call.args(),
    }),
  );
  return new TransactionBuilder(new Account(buyer.publicKey(), '1'), {
    fee: '100',
    networkPassphrase: env.network.networkPassphrase,
  })
    .addOperation(Operation.invokeHostFunction({ func, auth: [entry] }))
    .setTimeout(60)
    .build()
    .toXDR();
}

export interface PaymentCase {
  payload: Record<string, unknown> & { authorization: { format: string; xdr: string }; expiresAtLedger: number };
  requirements: Record<string, unknown>;
  entry: xdr.SorobanAuthorizationEntry;
}

/** A payload + requirements pair that verifies, with overrides for each side. */
export async function paymentCase(
  env: FacilitatorEnv,
  buyer: Keypair,
  payTo: string,
  amount: string,
  o: {
    sign?: Partial<SignOptions>;
    payload?: Record<string, unknown>;
    requirements?: Record<string, unknown>;
    format?: 'sorobanAuthorizationEntry' | 'transaction';
  } = {},
): Promise<PaymentCase> {
  const expiration = o.sign?.expiration ?? env.network.latestLedger() + 50;
  const entry = await signTransfer({ env, buyer, payTo, amount, ...o.sign, expiration });
  const format = o.format ?? 'sorobanAuthorizationEntry';
  const authXdr = format === 'transaction' ? asTransactionXdr(env, buyer, entry) : entry.toXDR('base64');
  const asset = { code: 'USDC', issuer: env.usdc.issuer };
  return {
    entry,
    payload: {
      x402Version: 2,
      scheme: 'exact',
      network: 'stellar:testnet',
      asset,
      amount,
      payTo,
      expiresAtLedger: expiration,
      authorization: { format, xdr: authXdr },
      ...o.payload,
    } as PaymentCase['payload'],
    requirements: {
      scheme: 'exact',
      network: 'stellar:testnet',
      amount,
      payTo,
      asset,
      maxTimeoutSeconds: 300,
      ...o.requirements,
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A worker of a second facilitator area on the same database and network: what another running process's job
 * does (test services run no job scheduler).
 */
export function facilitatorWorker(env: Pick<FacilitatorEnv, 'svc' | 'network'>, name: string) {
  const ctx = {
    db: env.svc.db,
    networks: testNetworks({
      rpcUrl: env.network.rpcUrl,
      assets: env.network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    metrics: createMetrics('test'),
    logger: createLogger({ silent: true }),
  } as unknown as AreaContext;
  const worker = createFacilitatorArea(ctx).workers.find((w) => w.name === name);
  if (!worker) throw new Error(`no worker ${name}`);
  return worker;
}

/** The x402 wire form of a payment case (the stock client's transaction envelope, atomic amounts, contract asset). */
export function x402Body(
  env: FacilitatorEnv,
  buyer: Keypair,
  c: PaymentCase,
  requirements: { amount: string; payTo: string },
  url?: string,
) {
  const atomic = (a: string) => toStroops(a).toString();
  const accepted = {
    scheme: 'exact',
    network: 'stellar:testnet',
    asset: env.usdc.contractId,
    amount: atomic(c.payload.amount as string),
    payTo: c.payload.payTo as string,
    maxTimeoutSeconds: 300,
    extra: { areFeesSponsored: true },
  };
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      ...(url ? { resource: { url } } : {}),
      accepted,
      payload: { transaction: asTransactionXdr(env, buyer, c.entry) },
    },
    paymentRequirements: { ...accepted, amount: atomic(requirements.amount), payTo: requirements.payTo },
  };
}

export async function metric(env: FacilitatorEnv, name: string, label: string): Promise<number> {
  const text = await env.svc.metrics.registry.getSingleMetricAsString(name);
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && l.includes(label))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

export const sendTransactions = (env: FacilitatorEnv) =>
  metric(env, 'ledger_rpc_requests_total', 'method="sendTransaction"');
