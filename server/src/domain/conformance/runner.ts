import { Asset, Keypair } from '@stellar/stellar-sdk';
import { ulid } from 'ulid';
import { DomainError } from '../errors';
import { LEDGER_SKEW_TOLERANCE, maxExpiryLedgers } from '../facilitator/rules/simulation';
import { signTransfer } from './sign-transfer';
import { probe402, type ProbeFetch } from './probe-402';
import type { ConformanceCheck, ConformanceRun, ConformanceRunStore } from './types';
import { MAX_TIMEOUT_SECONDS } from '../defaults';
import { toStroops } from '../amount';
import type { PaymentPayloadInput, PaymentRequirementsInput } from '../facilitator/check-payment';
import type { AssetRef } from '../facilitator/types';

export interface RunnerNetwork {
  network: string;
  /** The local network simulator: the full cycle runs (money moves only there). */
  local: boolean;
  rpcUrl: string | null;
  passphrase: string;
  assets: AssetRef[];
}

/** The facilitator use cases the runner drives (in process: the same code /v1/verify and /v1/settle run). */
export interface FacilitatorPort {
  supported(): { schemes: Array<{ name: string; network: string }> };
  verify(input: {
    paymentPayload: PaymentPayloadInput;
    paymentRequirements: PaymentRequirementsInput;
    resourceId?: string;
  }): Promise<{ id: string; status: string }>;
  settle(input: {
    paymentAttemptId: string;
    paymentPayload: PaymentPayloadInput;
    resourceId: string;
  }): Promise<unknown>;
  receipt(id: string): Promise<{ id: string }>;
  /** The seconds per ledger verify converts maxTimeoutSeconds with: the runner's authorizations fit that window. */
  ledgerSeconds(network: string): number;
}

export interface RunnerDeps {
  store: ConformanceRunStore;
  networks(): RunnerNetwork[];
  facilitator: FacilitatorPort;
  latestLedger(network: string): Promise<number>;
  /** Friendbot and faucet of the local network (null on real networks: the runner never funds there). */
  localFunding(network: string): {
    fund(address: string): Promise<void>;
    faucet(address: string, assetCode: string, amount: string): Promise<void>;
  } | null;
  /** The runner's own resource on a local network, and the address it is paid to (null: settle is skipped). */
  settleResource(
    network: string,
    asset: { code: string; issuer: string },
    amount: string,
  ): Promise<{ resourceId: string; payTo: string } | null>;
  fetch: ProbeFetch;
  /** Resources probed per run, at most. Default 200. */
  maxProbes?: number;
  /** Probes in flight at once. Default 4. */
  probeConcurrency?: number;
  /** Minimum gap between two probes of one host, ms. Default 1000. */
  perHostIntervalMs?: number;
  finished(run: ConformanceRun): void;
}

const CYCLE_AMOUNT = '0.01';
/** A test cycle's payment is announced as any cataloged resource's is. */
const CYCLE_TIMEOUT_SECONDS = MAX_TIMEOUT_SECONDS;

export function evidenceFor(n: RunnerNetwork): string {
  if (n.local) return 'local_simulation';
  return n.network === 'stellar:pubnet' ? 'mainnet_verification' : 'testnet_verification';
}

export function newRunId(): string {
  return `cfr_${ulid()}`;
}

async function timed(
  name: string,
  fn: () => Promise<string | null | 'skip'>,
  extra: Partial<ConformanceCheck> = {},
): Promise<ConformanceCheck> {
  const t = process.hrtime.bigint();
  const durationMs = () => Math.round(Number(process.hrtime.bigint() - t) / 1e4) / 100;
  try {
    const failure = await fn();
    if (failure === 'skip')
      return { name, outcome: 'skipped', reason: extra.reason ?? null, durationMs: durationMs(), ...extra };
    return {
      name,
      outcome: failure === null ? 'passed' : 'failed',
      reason: failure,
      durationMs: durationMs(),
      ...extra,
    };
  } catch (err) {
    const reason =
      err instanceof DomainError ? `${err.code}: ${err.message}` : `INTERNAL_ERROR: ${(err as Error).message}`;
    return { name, outcome: 'failed', reason: reason.slice(0, 500), durationMs: durationMs(), ...extra };
  }
}

/** Runs `fn`, expecting a DomainError with `code`; answers null when it came, else why not. */
async function expectCode(code: string, fn: () => Promise<unknown>): Promise<string | null> {
  try {
    await fn();
    return `expected ${code}, but the call succeeded`;
  } catch (err) {
    if (err instanceof DomainError && err.code === code) return null;
    return `expected ${code}, got ${err instanceof DomainError ? err.code : 'INTERNAL_ERROR'}`;
  }
}

/**
 * The facilitator conformance suite. A run covers one network: the facilitator cycle (full on the local network,
 * verify-only on testnet and pubnet) and a 402 probe of every cataloged http resource of that network.
 */
export function createConformanceRunner(deps: RunnerDeps) {
  async function facilitatorChecks(n: RunnerNetwork): Promise<ConformanceCheck[]> {
    const checks: ConformanceCheck[] = [];
    const asset = n.assets[0];
    checks.push(
      await timed('supported', async () =>
        deps.facilitator.supported().schemes.some((s) => s.name === 'exact' && s.network === n.network)
          ? null
          : `exact is not reported for ${n.network}`,
      ),
    );
    if (!asset)
      return [...checks, { name: 'verify', outcome: 'skipped', reason: 'no asset is configured on the network' }];
    const funding = n.local ? deps.localFunding(n.network) : null;
    const payer = Keypair.random();
    let settleTarget: { resourceId: string; payTo: string } | null = null;
    if (funding) {
      try {
        settleTarget = await deps.settleResource(n.network, { code: asset.code, issuer: asset.issuer }, CYCLE_AMOUNT);
      } catch {
        settleTarget = null;
      }
    }
    const payTo = settleTarget?.payTo ?? Keypair.random().publicKey();
    const latest = await deps.latestLedger(n.network);
    // As a well-behaved client signs: valid for maxTimeoutSeconds at the facilitator's ledger pace, without leaning on
    // the skew tolerance verify grants (a fixed +100 broke the expiry-window rule at 5 s ledgers: npm start's default).
    const expiresAt =
      latest +
      maxExpiryLedgers(CYCLE_TIMEOUT_SECONDS, deps.facilitator.ledgerSeconds(n.network)) -
      LEDGER_SKEW_TOLERANCE;
    const sign = (o: { amount?: string; contractId?: string; expiration?: number } = {}) =>
      signTransfer({
        payer,
        contractId: o.contractId ?? asset.contractId,
        payTo,
        amount: o.amount ?? CYCLE_AMOUNT,
        expiration: o.expiration ?? expiresAt,
        passphrase: n.passphrase,
      });
    // The facilitator's own inputs (amounts in stroops, the asset with its contract id), as each face converts them.
    const payload = (entryXdr: string, expiresAtLedger: number, amount = CYCLE_AMOUNT): PaymentPayloadInput => ({
      x402Version: 2,
      scheme: 'exact',
      network: n.network,
      asset,
      amount: toStroops(amount),
      payTo,
      expiresAtLedger,
      authorization: { format: 'sorobanAuthorizationEntry', xdr: entryXdr },
    });
    const requirements = (o: { amount?: string; payTo?: string } = {}): PaymentRequirementsInput => ({
      scheme: 'exact',
      network: n.network,
      amount: toStroops(o.amount ?? CYCLE_AMOUNT),
      payTo: o.payTo ?? payTo,
      asset,
      maxTimeoutSeconds: CYCLE_TIMEOUT_SECONDS,
    });

    if (funding) {
      // Full cycle, local network only: the runner funds its own payer and recipient.
      let attemptId: string | null = null;
      let receiptId: string | null = null;
      let funded = false;
      const good = await sign();
      const goodPayload = payload(good.toXDR('base64'), expiresAt);
      checks.push(
        await timed('fund_accounts', async () => {
          await funding.fund(payer.publicKey());
          await funding.faucet(payer.publicKey(), asset.code, '1');
          await funding.faucet(payTo, asset.code, '0.0000001');
          funded = true;
          return null;
        }),
      );
      checks.push(
        await timed('verify', async () => {
          if (!funded) return 'skip';
          const a = await deps.facilitator.verify({ paymentPayload: goodPayload, paymentRequirements: requirements() });
          attemptId = a.id;
          return a.status === 'verified' ? null : `status ${a.status}`;
        }),
      );
      const resourceId = settleTarget?.resourceId ?? null;
      checks.push(
        await timed(
          'settle',
          async () => {
            if (!attemptId || !resourceId) return 'skip';
            const s = (await deps.facilitator.settle({
              paymentAttemptId: attemptId,
              paymentPayload: goodPayload,
              resourceId,
            })) as { receipt?: { id: string }; receiptId?: string; status?: string };
            receiptId = s.receipt?.id ?? s.receiptId ?? null;
            return s.status === 'settled' ? null : `status ${String(s.status)}`;
          },
          resourceId ? {} : { reason: 'no conformance resource to settle against' },
        ),
      );
      checks.push(
        await timed('receipt_readable', async () => {
          if (!receiptId) return 'skip';
          const r = await deps.facilitator.receipt(receiptId);
          return r.id === receiptId ? null : 'another receipt came back';
        }),
      );
      checks.push(
        await timed('replay_refused', async () => {
          if (!attemptId) return 'skip';
          return expectCode('REPLAY_DETECTED', () =>
            deps.facilitator.verify({ paymentPayload: goodPayload, paymentRequirements: requirements() }),
          );
        }),
      );
    }

    // Checks that move no money: every network.
    checks.push(
      await timed('expired_refused', async () => {
        const expiration = Math.max(1, latest - 1);
        const e = await sign({ expiration });
        return expectCode('AUTH_EXPIRED', () =>
          deps.facilitator.verify({
            paymentPayload: payload(e.toXDR('base64'), expiration),
            paymentRequirements: requirements(),
          }),
        );
      }),
    );
    checks.push(
      await timed('wrong_amount_refused', async () => {
        const e = await sign();
        return expectCode('AMOUNT_MISMATCH', () =>
          deps.facilitator.verify({
            paymentPayload: payload(e.toXDR('base64'), expiresAt),
            paymentRequirements: requirements({ amount: '0.02' }),
          }),
        );
      }),
    );
    checks.push(
      await timed('wrong_asset_refused', async () => {
        // Signed for another contract than the required asset's (the network's native asset contract).
        const other =
          n.assets.find((a) => a.contractId !== asset.contractId)?.contractId ?? nativeContractId(n.passphrase);
        const e = await sign({ contractId: other });
        return expectCode('ASSET_MISMATCH', () =>
          deps.facilitator.verify({
            paymentPayload: payload(e.toXDR('base64'), expiresAt),
            paymentRequirements: requirements(),
          }),
        );
      }),
    );
    checks.push(
      await timed('wrong_recipient_refused', async () => {
        const e = await sign();
        return expectCode('RECIPIENT_MISMATCH', () =>
          deps.facilitator.verify({
            paymentPayload: payload(e.toXDR('base64'), expiresAt),
            paymentRequirements: requirements({ payTo: Keypair.random().publicKey() }),
          }),
        );
      }),
    );
    return checks;
  }

  async function probeChecks(n: RunnerNetwork, runId: string): Promise<ConformanceCheck[]> {
    const targets = await deps.store.probeTargets(n.network, deps.maxProbes ?? 200);
    const out: ConformanceCheck[] = [];
    const lastByHost = new Map<string, number>();
    const gap = deps.perHostIntervalMs ?? 1000;
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const target = targets[next++];
        let host: string;
        try {
          host = new URL(target.url.replace(/[{}]/g, '')).host;
        } catch {
          host = target.url;
        }
        // Per-host rate: wait until `gap` after this host's previous probe (reserved before waiting).
        const due = Math.max(Date.now(), (lastByHost.get(host) ?? 0) + gap);
        lastByHost.set(host, due);
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        const contractId =
          n.assets.find((a) => a.code === target.assetCode && a.issuer === target.assetIssuer)?.contractId ?? null;
        const check = await timed(
          'probe_402',
          async () => {
            const r = await probe402(deps.fetch, target, contractId);
            await deps.store.recordProbe(target.id, runId, r.passed, r.reason);
            return r.reason;
          },
          { resourceId: target.id },
        );
        out.push(check);
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(deps.probeConcurrency ?? 4, Math.max(1, targets.length)) }, worker),
    );
    return out.sort((a, b) => (a.resourceId ?? '').localeCompare(b.resourceId ?? ''));
  }

  return {
    /** Queues one run per network (or the named one) with an RPC. */
    async queue(trigger: ConformanceRun['trigger'], network?: string): Promise<ConformanceRun[]> {
      const targets = deps.networks().filter((n) => n.rpcUrl && (!network || n.network === network));
      if (network && targets.length === 0)
        throw new DomainError('UNSUPPORTED_NETWORK', `${network} has no RPC configured: nothing to check`);
      const runs: ConformanceRun[] = [];
      for (const n of targets)
        runs.push(
          await deps.store.createRun({ id: newRunId(), network: n.network, trigger, evidence: evidenceFor(n) }),
        );
      return runs;
    },

    /** Executes a queued run (no-op when another process already took it). */
    async execute(runId: string): Promise<ConformanceRun | null> {
      const run = await deps.store.findRun(runId);
      if (!run || !(await deps.store.startRun(runId))) return run;
      const n = deps.networks().find((x) => x.network === run.network);
      let checks: ConformanceCheck[];
      if (!n)
        checks = [
          { name: 'network', outcome: 'failed', reason: `UNSUPPORTED_NETWORK: ${run.network} is no longer configured` },
        ];
      else {
        try {
          checks = [...(await facilitatorChecks(n)), ...(await probeChecks(n, runId))];
        } catch (err) {
          const reason =
            err instanceof DomainError ? `${err.code}: ${err.message}` : `INTERNAL_ERROR: ${(err as Error).message}`;
          checks = [{ name: 'run', outcome: 'failed', reason: reason.slice(0, 500) }];
        }
      }
      const status = checks.some((c) => c.outcome === 'failed') ? 'failed' : 'passed';
      await deps.store.finishRun(runId, status, checks);
      const done = (await deps.store.findRun(runId))!;
      deps.finished(done);
      return done;
    },
  };
}

export type ConformanceRunner = ReturnType<typeof createConformanceRunner>;

function nativeContractId(passphrase: string): string {
  return Asset.native().contractId(passphrase);
}
