import {
  Account,
  BASE_FEE,
  Keypair,
  Operation,
  TransactionBuilder,
  rpc,
  xdr,
  type FeeBumpTransaction,
  type Transaction,
} from '@stellar/stellar-sdk';
import type {
  ChannelLease,
  LedgerPort,
  PreparedSettlement,
  SimulationOutcome,
  SubmitResult,
  TransactionState,
} from '../domain/facilitator/types';
import { DomainError } from '../domain/errors';
import { DEFAULT_RPC_TIMEOUT_MS } from '../domain/defaults';
import { chooseSettlementFees, percentileFee, type FeePercentile } from '../domain/facilitator/settlement-fees';
import type { FacilitatorMetrics } from '../metrics/facilitator';
import type { NetworkRegistry } from '../domain/network-registry';
import type { LeasedChannel } from './channel-accounts';
// CAP-71 credentials in the SDK's XDR types before any envelope is decoded here (see the module).
import '../domain/facilitator/cap71-xdr';
import { networkKnownDown } from './rpc-health';
import { sorobanRpc, type SorobanRpc } from './soroban-rpc';
import { simulationEnvelopeXdr } from './simulation-envelope';
import { simulationForRules } from './simulation-answer';

export interface SorobanLedgerOptions {
  /**
   * Highest total fee (stroops) a settlement transaction may pay (FACILITATOR_MAX_FEE_STROOPS): the inclusion fee
   * from getFeeStats is capped so that inclusion + resource fee stays within it; a resource fee alone above it is
   * refused.
   */
  maxFeeStroops: number;
  /** FACILITATOR_MAX_INCLUSION_FEE_STROOPS: the most bid for inclusion per operation (default 10,000). */
  maxInclusionFeeStroops?: number;
  /** FACILITATOR_MAX_RESOURCE_FEE_STROOPS: the largest simulated resource fee a settlement may pay (default 500,000).
   * */
  maxResourceFeeStroops?: number;
  /** FACILITATOR_INCLUSION_FEE_PERCENTILE: the getFeeStats Soroban inclusion fee percentile bid (default p90). */
  inclusionFeePercentile?: FeePercentile;
  /** FACILITATOR_FEE_STATS_TTL_MS: how long one getFeeStats answer serves every settlement of a network (default 5000).
   * */
  feeStatsTtlMs?: number;
  /** FACILITATOR_FEE_ACCOUNT_SECRET: when set, every settlement is wrapped in a fee-bump paid by this account. */
  feeAccount?: Keypair | null;
  /** Validity of a settlement transaction (its time bound), seconds. */
  txTimeoutSeconds: number;
  /**
   * RPC_TIMEOUT_MS: deadline of one RPC call, ms (default: domain/defaults.ts; the JSON-RPC client destroys the
   * request when it passes). An RPC that accepts the connection and never answers fails the call with
   * SERVICE_UNAVAILABLE instead of holding the request; a submission cut off this way stays pending for the
   * confirmation worker (its outcome is unknown, it is never resubmitted).
   */
  rpcTimeoutMs?: number;
}

/** The network-health worker's probe interval: an answer this recent outweighs a probe that timed out. */
const RECENT_ANSWER_MS = 10_000;

/**
 * The ledger port over Soroban RPC (the one JSON-RPC client, soroban-rpc.ts): the same code talks to the local
 * network, testnet and pubnet. Every call is counted, timed and marks the network's RPC up or down.
 */
export class SorobanLedger implements LedgerPort {
  constructor(
    private readonly networks: NetworkRegistry,
    private readonly metrics: FacilitatorMetrics,
    private readonly opts: SorobanLedgerOptions,
  ) {}

  private server(network: string): SorobanRpc {
    const n = this.networks.get(network);
    if (!n?.rpcUrl) throw new DomainError('SERVICE_UNAVAILABLE', `No ledger RPC is configured for ${network}`);
    return sorobanRpc(n.rpcUrl, this.opts.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS);
  }

  private passphrase(network: string): string {
    const n = this.networks.get(network);
    if (!n) throw new DomainError('UNSUPPORTED_NETWORK', `Network ${network} is not supported`);
    return n.passphrase;
  }

  /** Runs one RPC call with metrics; transport failures become SERVICE_UNAVAILABLE. */
  private async call<T>(network: string, method: string, fn: (s: SorobanRpc) => Promise<T>): Promise<T> {
    // Fail fast while the network-health worker knows this network's RPC is down (see ledger/rpc-health.ts).
    if (this.knownDown(network))
      throw new DomainError('SERVICE_UNAVAILABLE', `The ledger RPC of ${network} is down; retry later`);
    const server = this.server(network);
    return this.measured(network, method, () => fn(server));
  }

  /** When this process last had an answer from each network's RPC; a transport failure forgets it. */
  private readonly answeredAt = new Map<string, number>();

  /**
   * Down as the network-health records say AND silent towards this process for a probe interval. A saturated RPC
   * whose health probe timed out (3 s) while it still answers this process's calls is not taken for a dead one: at
   * load 20 on two cores every verify was refused 503 until the next probe (scripts/bench/PROFILE.md, "Verify
   * (session 5)"). A dead RPC fails the next call, which forgets the answer, and every call after it fails fast.
   */
  private knownDown(network: string): boolean {
    if (!networkKnownDown(this.networks, network)) return false;
    const at = this.answeredAt.get(network);
    return at === undefined || Date.now() - at > RECENT_ANSWER_MS;
  }

  /** Counts and times one RPC call (the client bounds it by rpcTimeoutMs); marks the RPC up or down; transport failures
   * become SERVICE_UNAVAILABLE. */
  private async measured<T>(network: string, method: string, work: () => Promise<T>): Promise<T> {
    this.metrics.rpcRequests.inc({ network, method });
    const end = this.metrics.rpcLatency.startTimer({ network, method });
    try {
      const out = await work();
      this.metrics.rpcUp.set({ network }, 1);
      this.answeredAt.set(network, Date.now());
      return out;
    } catch (err) {
      this.metrics.rpcErrors.inc({ network, method });
      if (err instanceof DomainError) throw err;
      this.metrics.rpcUp.set({ network }, 0);
      this.answeredAt.delete(network);
      throw new DomainError('SERVICE_UNAVAILABLE', `The ledger RPC of ${network} is unavailable`);
    } finally {
      end();
    }
  }

  async latestLedger(network: string): Promise<number> {
    const res = await this.call(network, 'getLatestLedger', (s) => s.latestLedger());
    this.metrics.latestLedger.set({ network }, res.sequence);
    return res.sequence;
  }

  /**
   * verify's and settle's authority: one simulateTransaction in enforce mode of exactly the transaction we would
   * submit (source: a facilitator account; sequence numbers are not judged by simulation), against current state.
   */
  async simulate(
    network: string,
    hostFunction: xdr.HostFunction,
    auth: xdr.SorobanAuthorizationEntry[],
    source: string,
  ): Promise<SimulationOutcome> {
    this.passphrase(network); // an unknown network is UNSUPPORTED_NETWORK, as before any RPC question
    // The envelope built straight in XDR, the answer decoded only as far as the rules read it (issue #31).
    const envelope = simulationEnvelopeXdr(source, hostFunction, auth, this.opts.txTimeoutSeconds);
    return simulationForRules(
      await this.call(network, 'simulateTransaction', (s) => s.simulateRaw(envelope, 'enforce')),
    );
  }

  /**
   * The observed inclusion fee: getFeeStats' Soroban inclusion fee at the configured percentile (p90 by default) of
   * recent ledgers; null when the RPC does not report fee stats (the base fee is then bid). One answer serves every
   * settlement of the network for feeStatsTtlMs, and concurrent settlements share one call in flight.
   */
  private readonly feeStats = new Map<string, { fee: Promise<bigint | null>; at: number }>();
  private observedInclusionFee(network: string): Promise<bigint | null> {
    const known = this.feeStats.get(network);
    if (known && Date.now() - known.at < (this.opts.feeStatsTtlMs ?? 5000)) return known.fee;
    const percentile = this.opts.inclusionFeePercentile ?? 'p90';
    const fee = this.call(network, 'getFeeStats', (s) => s.feeStats()).then(
      (stats) =>
        percentileFee(stats.sorobanInclusionFee as unknown as Partial<Record<FeePercentile, string>>, percentile),
      () => null,
    );
    this.feeStats.set(network, { fee, at: Date.now() });
    return fee;
  }

  async prepareSettlement(
    network: string,
    lease: ChannelLease,
    entryXdr: string,
  ): Promise<PreparedSettlement | { error: string; simulation?: SimulationOutcome }> {
    const keypair = (lease as LeasedChannel).keypair;
    if (!keypair) throw new Error('the lease does not come from the channel account pool');
    const networkPassphrase = this.passphrase(network);
    const entry = xdr.SorobanAuthorizationEntry.fromXDR(entryXdr, 'base64');
    const call = entry.rootInvocation().function().contractFn();
    const func = xdr.HostFunction.hostFunctionTypeInvokeContract(
      new xdr.InvokeContractArgs({
        contractAddress: call.contractAddress(),
        functionName: call.functionName(),
        args: call.args(),
      }),
    );
    // Fresh sequence number for every transaction: never trust a cached one.
    const [account, observed] = await Promise.all([
      this.call(network, 'getAccount', (s) => existing(s.account(lease.address))),
      this.observedInclusionFee(network),
    ]);
    const validUntil = new Date((Math.floor(Date.now() / 1000) + this.opts.txTimeoutSeconds) * 1000);
    const draft = new TransactionBuilder(account, {
      fee: BASE_FEE,
      networkPassphrase,
      timebounds: { minTime: 0, maxTime: validUntil.getTime() / 1000 },
    })
      .addOperation(Operation.invokeHostFunction({ func, auth: [entry] }))
      .build();
    const sim = await this.call(network, 'simulateTransaction', (s) => s.simulate(draft, 'enforce'));
    const simulation = simulationOutcome(sim);
    if (rpc.Api.isSimulationError(sim)) return { error: `simulation failed: ${sim.error}`, simulation };
    if (rpc.Api.isSimulationRestore(sim)) return { error: 'simulation requires a ledger entry restore', simulation };
    // The inclusion bid: what recent ledgers bid (surge pricing), the resource fee: this simulation's; both capped.
    const fees = chooseSettlementFees(observed, BigInt(sim.minResourceFee), this.opts.inclusionFeePercentile ?? 'p90', {
      maxInclusion: BigInt(this.opts.maxInclusionFeeStroops ?? 10_000),
      maxResource: BigInt(this.opts.maxResourceFeeStroops ?? 500_000),
      maxTotal: BigInt(this.opts.maxFeeStroops),
      baseFee: BigInt(BASE_FEE),
    });
    if ('error' in fees) return { error: fees.error, simulation };
    // assembleTransaction keeps the auth entries already on the operation: the buyer's signed entry is not replaced.
    const tx = rpc
      .assembleTransaction(TransactionBuilder.cloneFrom(draft, { fee: fees.inclusion.toString() }).build(), sim)
      .build();
    tx.sign(keypair);
    const signed = this.opts.feeAccount ? this.feeBumped(tx, networkPassphrase) : tx;
    return {
      hash: signed.hash().toString('hex'),
      envelopeXdr: signed.toXDR(),
      channel: lease.address,
      validUntil,
      sequence: tx.sequence,
      maxFee: BigInt(signed.fee),
      fees,
      simulation,
    };
  }

  /** The channel's transaction wrapped in a fee-bump paid by the fee account (channels then need no XLM for fees). */
  private feeBumped(inner: Transaction, networkPassphrase: string): FeeBumpTransaction {
    const feeAccount = this.opts.feeAccount!;
    const perOperation = (BigInt(inner.fee) + BigInt(BASE_FEE)).toString();
    const bump = TransactionBuilder.buildFeeBumpTransaction(feeAccount, perOperation, inner, networkPassphrase);
    bump.sign(feeAccount);
    return bump;
  }

  async submit(network: string, envelopeXdr: string): Promise<SubmitResult> {
    const tx = TransactionBuilder.fromXDR(envelopeXdr, this.passphrase(network));
    const res = await this.call(network, 'sendTransaction', (s) => s.send(tx));
    if (res.status === 'PENDING' || res.status === 'DUPLICATE') return { status: res.status };
    const reason = res.errorResult ? resultReason(res.errorResult) : res.status;
    return { status: res.status === 'TRY_AGAIN_LATER' ? 'TRY_AGAIN_LATER' : 'ERROR', reason };
  }

  async accountSequence(network: string, address: string): Promise<bigint | null> {
    try {
      const account = await this.call(network, 'getAccount', (s) => existing(s.account(address)));
      return BigInt(account.sequenceNumber());
    } catch (err) {
      if (err instanceof DomainError) throw err;
      return null;
    }
  }

  async transaction(network: string, hash: string): Promise<TransactionState> {
    const res = await this.call(network, 'getTransaction', (s) => s.transaction(hash));
    if (res.status === 'SUCCESS')
      return {
        status: 'SUCCESS',
        ledger: res.ledger,
        closedAt: new Date(res.createdAt * 1000),
        feeCharged: feeCharged(res.result),
      };
    if (res.status === 'FAILED')
      return {
        status: 'FAILED',
        ledger: res.ledger,
        reason: resultReason(res.result),
        feeCharged: feeCharged(res.result),
      };
    const time = (t: unknown) => (Number.isFinite(Number(t)) && Number(t) > 0 ? new Date(Number(t) * 1000) : undefined);
    return {
      status: 'NOT_FOUND',
      latestLedger: res.latestLedger,
      latestLedgerCloseTime: time(res.latestLedgerCloseTime),
      oldestLedger: res.oldestLedger,
      oldestLedgerCloseTime: time(res.oldestLedgerCloseTime),
    };
  }
}

/** An account read that found nothing fails like `rpc.Server.getAccount` did (the call then answers
 * SERVICE_UNAVAILABLE). */
async function existing(account: Promise<Account | null>): Promise<Account> {
  const found = await account;
  if (!found) throw new Error('Account not found');
  return found;
}

function feeCharged(result: xdr.TransactionResult | undefined): bigint | null {
  try {
    return result ? BigInt(result.feeCharged().toString()) : null;
  } catch {
    return null;
  }
}

/** The simulation as the facilitator's rules read it (simulation.ts). */
function simulationOutcome(sim: rpc.Api.SimulateTransactionResponse): SimulationOutcome {
  const events = (sim as { events?: xdr.DiagnosticEvent[] }).events ?? [];
  if (rpc.Api.isSimulationError(sim))
    return { latestLedger: sim.latestLedger, error: sim.error, events, minResourceFee: 0n };
  return { latestLedger: sim.latestLedger, error: null, events, minResourceFee: BigInt(sim.minResourceFee ?? '0') };
}

/** The ledger's result code, with the first failing operation result for txFailed (e.g. "txFailed:
 * invokeHostFunctionTrapped"). */
export function resultReason(result: xdr.TransactionResult): string {
  const code = result.result().switch().name;
  try {
    const inner =
      code === 'txFeeBumpInnerFailed' ? result.result().innerResultPair().result().result() : result.result();
    const ops = inner.results?.() ?? [];
    for (const op of ops) {
      const tr = op.tr?.();
      if (!tr) return `${code}: ${op.switch().name}`;
      const arm = tr.switch().name;
      const value = (tr as unknown as Record<string, () => { switch(): { name: string } }>)[
        `${arm.replace(/^(\w)/, (m) => m.toLowerCase())}Result`
      ];
      const name = typeof value === 'function' ? value.call(tr).switch().name : arm;
      if (!/Success$/.test(name)) return `${code}: ${name}`;
    }
  } catch {
    // fall back to the top-level code
  }
  return code;
}
