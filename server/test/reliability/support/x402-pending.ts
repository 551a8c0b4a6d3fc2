// The fixture of the x402 `settlement_pending` files (x402-settlement-pending.test.ts: two processes;
// x402-settlement-pending-restart.test.ts: a restart): `server/src/main.ts` processes on one database, the local
// network in the test process behind an RPC front that can stall `getTransaction` and counts every `sendTransaction`.
import { Keypair } from '@stellar/stellar-sdk';
import { createTestDatabase } from '../../support/database';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { asTransactionXdr, paymentCase, type FacilitatorEnv } from '../../facilitator/helpers';
import { toStroops } from '../../../src/domain/amount';
import type { SignedUpSeller } from '../../support/fixtures';
import { startMainProcess, type MainProcess } from './main-process';
import { sellerWithResourceOverHttp } from './over-http';
import { startStallingRpc, type StallingRpc } from './stalling-rpc';

const CLIENT_BOUND_MS = 90_000; // @x402/core 2.27 HTTPFacilitatorClient's default timeout

export interface SettleBody {
  success: boolean;
  errorReason?: string;
  transaction: string;
  network: string;
  payer?: string;
}

export async function settle(baseUrl: string, body: unknown): Promise<{ status: number; body: SettleBody }> {
  const r = await fetch(`${baseUrl}/x402/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_BOUND_MS),
  });
  return { status: r.status, body: (await r.json()) as SettleBody };
}

/** @x402/core 2.27's rule (x402ResourceServer.settleWithPendingRetry): retry once, at once, when pending with a hash.
 * */
export const retryable = (b: SettleBody) => !b.success && b.errorReason === 'settlement_pending' && !!b.transaction;

export interface PendingFixture {
  network: LocalNetwork;
  rpc: StallingRpc;
  /** The processes' environment (a restart starts another with it). */
  env: Record<string, string>;
  databaseUrl: string;
  seller: SignedUpSeller;
  /** The running processes, in start order. */
  mains: MainProcess[];
  /** A fresh funded buyer's x402 settle body for the seller's cataloged resource, 0.25 USDC. */
  x402Payment(): Promise<{ buyer: Keypair; body: X402SettleBody }>;
  /** The first settle on `base` while the RPC cannot say whether the transaction landed: settlement_pending. */
  pendingOn(base: string, body: unknown): Promise<{ first: { status: number; body: SettleBody }; sent: number }>;
  stop(): Promise<void>;
}

export interface X402SettleBody {
  x402Version: number;
  paymentPayload: Record<string, unknown>;
  paymentRequirements: Record<string, unknown>;
}

/**
 * Starts `processes` main.ts processes on a fresh database, against the local network (200 ms ledgers) behind a
 * stalling RPC front, and signs up a seller with a cataloged resource. The waits that make a `settlement_pending`
 * answer are set short here (their defaults are unchanged): the shortest time bound (5 s), a 1 s grace and a 3 s RPC
 * deadline, so a stalled settle answers pending after two unanswered `getTransaction` calls (~6.4 s) instead of one of
 * the default 8 s (~8.3 s).
 */
export async function startPendingFixture(processes: number): Promise<PendingFixture> {
  const started: Array<() => Promise<unknown>> = []; // stopped last first, also when the start fails
  const stop = async () => {
    for (const s of started.reverse()) await s();
  };
  try {
    return await start(processes, started, stop);
  } catch (err) {
    await stop();
    throw err;
  }
}

async function start(
  processes: number,
  started: Array<() => Promise<unknown>>,
  stop: () => Promise<void>,
): Promise<PendingFixture> {
  const database = await createTestDatabase();
  started.push(() => database.drop());
  const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
  started.push(() => network.stop());
  // "Did it land?" never answered while `rpc.state.stall` is on.
  const rpc = await startStallingRpc(network.rpcUrl, 'getTransaction');
  started.push(() => rpc.close());
  const channels = Array.from({ length: 2 }, () => Keypair.random());
  for (const k of channels) await network.fundAccount(k.publicKey());
  const usdc = network.assets.find((a) => a.code === 'USDC')!;
  const env = {
    LOCAL_NETWORK: 'false',
    STELLAR_TESTNET_RPC_URL: rpc.url,
    STELLAR_TESTNET_ASSETS: `USDC:${usdc.issuer}`,
    STELLAR_TESTNET_CHANNEL_SECRETS: channels.map((k) => k.secret()).join(','),
    LEDGER_CLOSE_MS: '200',
    // The shortest time bound: settle answers settlement_pending once the time bound plus the grace has passed, at
    // the end of the unanswered getTransaction then in flight (each ends at the RPC deadline).
    SETTLEMENT_TX_TIMEOUT_SECONDS: '5',
    // The shortest grace (default 10 s); a retry still asks the ledger once within it.
    SETTLEMENT_CONFIRM_GRACE_MS: '1000',
    // Each stalled getTransaction ends after 3 s (default 8 s): the second one ends past the 5 s time bound plus the
    // grace. Every other call here answers in milliseconds.
    RPC_TIMEOUT_MS: '3000',
  };
  const mains: MainProcess[] = [];
  started.push(() => Promise.all(mains.map((m) => m.cleanup())));
  // One after the other: starts are CPU-bound (two at once took longer than two in a row on 2 cores).
  for (let i = 0; i < processes; i++) mains.push(await startMainProcess({ databaseUrl: database.url, env }));
  const { seller } = await sellerWithResourceOverHttp(mains[0].baseUrl, network);

  async function x402Payment() {
    const buyer = Keypair.random();
    await network.fundAccount(buyer.publicKey());
    await network.faucet(buyer.publicKey(), 'USDC', '1');
    const fenv = { network, usdc, svc: { app: mains[0].baseUrl } } as unknown as FacilitatorEnv;
    const c = await paymentCase(fenv, buyer, seller.wallet.publicKey(), '0.25', {
      sign: { expiration: network.latestLedger() + 600 },
    });
    const accepted = {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset: usdc.contractId,
      amount: toStroops('0.25').toString(),
      payTo: seller.wallet.publicKey(),
      maxTimeoutSeconds: 300,
      extra: { areFeesSponsored: true },
    };
    const body = {
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        resource: { url: `https://${seller.domain}/v1/forecast/porto` },
        accepted,
        payload: { transaction: asTransactionXdr(fenv, buyer, c.entry) },
      },
      paymentRequirements: accepted,
    };
    return { buyer, body };
  }

  async function pendingOn(base: string, body: unknown) {
    rpc.state.stall = true;
    const sentBefore = rpc.state.sent;
    const first = await settle(base, body);
    rpc.state.stall = false;
    return { first, sent: rpc.state.sent - sentBefore };
  }

  return {
    network,
    rpc,
    env,
    databaseUrl: database.url,
    seller,
    mains,
    x402Payment,
    pendingOn,
    stop,
  };
}
