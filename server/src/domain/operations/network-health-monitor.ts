import { evaluateNetwork, nextRecord, type NetworkHealthRecord, type NetworkHealthRules } from './network-health';
import type { Check } from './health';

/** What one probe of a network's Soroban RPC saw. `error` is the client's error text (method and cause, never the URL):
 * not shown, not logged. */
export interface RpcProbe {
  /** The RPC answered getHealth and getLatestLedger. */
  up: boolean;
  /** getHealth said "healthy". */
  healthy: boolean;
  latencyMs: number;
  latestLedger: number | null;
  /** How many of the two calls failed (0..2). */
  errors: number;
  error: string | null;
}

/** What the monitor needs: ports, so it runs with the real RPC and database (no express, no sequelize here). */
export interface NetworkHealthDeps {
  /** Networks with an RPC to probe. */
  networks(): Array<{ network: string; rpcUrl: string }>;
  probe(rpcUrl: string): Promise<RpcProbe>;
  load(network: string): Promise<NetworkHealthRecord | null>;
  loadAll(): Promise<NetworkHealthRecord[]>;
  save(r: NetworkHealthRecord): Promise<void>;
  observe(
    network: string,
    probe: { up: boolean; latencyMs: number; latestLedger: number | null; errors: number },
    check: Check,
  ): void;
  /** Raw error text goes here (debug level, never to a response). */
  debug(network: string, error: string): void;
  rules: NetworkHealthRules;
  /** How long the in-memory copy of the records is trusted before re-reading the database. Default 2 s. */
  cacheMs?: number;
}

/**
 * Probes the networks and keeps the current records. `isKnownDown` is synchronous (the ledger adapter asks it
 * before every RPC call): it answers from an in-memory copy refreshed from the database in the background, so a
 * process that does not run the worker still learns within a few seconds that another process saw the RPC down.
 */
export class NetworkHealthMonitor {
  private readonly records = new Map<string, NetworkHealthRecord>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: NetworkHealthDeps) {}

  async probeAll(): Promise<void> {
    await Promise.all(this.deps.networks().map((n) => this.probeOne(n.network, n.rpcUrl)));
  }

  async probeOne(network: string, rpcUrl: string): Promise<NetworkHealthRecord> {
    const probe = await this.deps.probe(rpcUrl);
    if (probe.error) this.deps.debug(network, probe.error);
    const previous = (await this.deps.load(network)) ?? this.records.get(network) ?? null;
    const now = new Date();
    const record = nextRecord(previous, network, probe, now);
    await this.deps.save(record);
    this.records.set(network, record);
    this.deps.observe(network, probe, evaluateNetwork(record, this.deps.rules, now));
    return record;
  }

  /** The /health checks of every network with an RPC, from the stored records. */
  async checks(): Promise<Record<string, Check>> {
    // When the database does not answer (/health then says `down` for it), judge from the last records seen.
    const loaded = await this.deps.loadAll().catch(() => [...this.records.values()]);
    const stored = new Map(loaded.map((r) => [r.network, r]));
    const now = new Date();
    const out: Record<string, Check> = {};
    for (const n of this.deps.networks()) {
      const r = stored.get(n.network) ?? null;
      if (r) this.records.set(n.network, r);
      out[n.network] = evaluateNetwork(r, this.deps.rules, now);
    }
    return out;
  }

  record(network: string): NetworkHealthRecord | null {
    return this.records.get(network) ?? null;
  }

  isKnownDown(network: string): boolean {
    const r = this.records.get(network);
    return r !== undefined && evaluateNetwork(r, this.deps.rules, new Date()).reason === 'RPC_UNREACHABLE';
  }

  async refresh(): Promise<void> {
    for (const r of await this.deps.loadAll()) this.records.set(r.network, r);
  }

  start(): void {
    if (this.timer) return;
    void this.refresh().catch(() => undefined);
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), this.deps.cacheMs ?? 2000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
