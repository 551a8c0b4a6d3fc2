/**
 * The only reader of process.env. Every setting has a safe local default and is validated once at start; a bad
 * value stops the process with one clear message per variable.
 */
import { DEFAULT_FEE_BUDGETS } from './domain/facilitator/fee-budgets';
import {
  DEFAULT_ABANDONED_CLAIM_SECONDS,
  DEFAULT_CHANNEL_ACCOUNTS,
  DEFAULT_CHANNEL_LEASE_SECONDS,
  DEFAULT_CONFIRM_GRACE_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  DEFAULT_MAX_FEE_STROOPS,
  DEFAULT_MIN_AMOUNT,
  DEFAULT_SEARCH_SYNC_SECONDS,
  DEFAULT_STALE_CLEANUP_SECONDS,
  DEFAULT_TX_TIMEOUT_SECONDS,
} from './domain/defaults';
import { FEE_PERCENTILES, type FeePercentile } from './domain/facilitator/settlement-fees';
import path from 'node:path';
import { LOG_LEVELS, type LogLevel } from './logger';
import { DEFAULT_POOL_MAX, MAX_POOL_MAX } from './data/database';

export { NETWORK_IDS, type NetworkId, type AssetConfig, type NetworkConfig } from './domain/network-registry';
import type { NetworkId, NetworkConfig, AssetConfig } from './domain/network-registry';
import { isAmount } from './domain/amount';

export interface Config {
  environment: string;
  host: string;
  port: number;
  /** Service processes (node:cluster) when > 1: see cluster-primary.ts (WEB_CONCURRENCY, default 1). */
  webConcurrency: number;
  databaseUrl: string | null;
  embeddedDatabaseDir: string;
  /** EMBEDDED_POSTGRES_PORT: where the embedded PostgreSQL listens on 127.0.0.1 (0: a free port chosen at start). */
  embeddedDatabasePort: number;
  mongodbUrl: string | null;
  operatorApiKey: string | null;
  /** OPERATOR_API_KEY_PREVIOUS: accepted beside OPERATOR_API_KEY during a rotation through the environment. */
  operatorApiKeyPrevious: string | null;
  operatorKeyFile: string;
  /**
   * Receipt signing: RECEIPT_SIGNING_KEY (Ed25519 private key, PKCS#8 PEM; "\n" escapes allowed), else the key file
   * in the data folder (generated once, mode 0600). Public keys of retired keys (JSON array of JWKs) from
   * RECEIPT_PREVIOUS_PUBLIC_KEYS and from the previous-keys file stay published in /.well-known/jwks.json.
   */
  receiptSigning: { key: string | null; keyFile: string; previousKeys: string | null; previousKeysFile: string };
  rateLimit: { points: number; windowSeconds: number };
  /** RETENTION_FAILED_ATTEMPTS_DAYS, RETENTION_INTERVAL_MINUTES. */
  retention: { failedAttemptsDays: number; every: string };
  /** SIGNUP_CHALLENGES_PER_HOUR_PER_CLIENT / _PER_WALLET. */
  challengeLimit: { perClient: number; perWallet: number };
  bodyLimitBytes: number;
  /** statement_timeout of every database connection of the service, in ms (0 = none). */
  statementTimeoutMs: number;
  /** Connections in the service's database pool (DATABASE_POOL_MAX). */
  databasePoolMax: number;
  /**
   * `primaryRpcUrl`: set by a cluster's primary for its service processes only (LOCAL_NETWORK_PRIMARY_RPC_URL): the
   * RPC of the local network the primary runs, which they connect to instead of starting one.
   */
  localNetwork: {
    enabled: boolean;
    host: string;
    port: number;
    ledgerCloseMs: number;
    dataFile: string;
    primaryRpcUrl: string | null;
  };
  networks: NetworkConfig[];
  domainVerificationTestMode: boolean;
  /** LOCAL_DEV_DOMAINS: *.test seller domains verify over http on 127.0.0.1:LOCAL_DEV_DOMAINS_PORT (local development
   * only). */
  localDevDomains: { enabled: boolean; port: number };
  responseValidation: boolean;
  version: string;
  commit: string | null;
  logRequests: boolean;
  /** SERVER_TIMING: a Server-Timing header per response, stage by stage (http/server-timing.ts; measurement only). */
  serverTiming: boolean;
  /** LOG_LEVEL: the lowest level written (debug, info, warn, error). */
  logLevel: LogLevel;
  /** Facilitator settings. Channel secrets are never logged. */
  facilitator: {
    /** Channel accounts per network created at start on the local network. */
    channelAccounts: number;
    /** Channel account secret seeds per network (real networks); the same list for every process (leases are shared in
     * the database). */
    channelSecrets: Partial<Record<NetworkId, string[]>>;
    /** Local network: file holding the seed channel keypairs derive from (DATA_DIR/channel-seed, created 0600; never
     * logged). */
    channelSeedFile: string;
    /** Highest total fee a settlement transaction may pay, in stroops. */
    maxFeeStroops: number;
    /** The caps of its two parts: the inclusion bid per operation and the simulated resource fee, stroops. */
    maxInclusionFeeStroops: number;
    maxResourceFeeStroops: number;
    /** The getFeeStats Soroban inclusion fee percentile a settlement bids, and how long one answer is reused (ms). */
    inclusionFeePercentile: FeePercentile;
    feeStatsTtlMs: number;
    /** FACILITATOR_FEE_ACCOUNT_SECRET: pays every settlement's fee through a fee-bump (unset: channels pay). Never
     * logged. */
    feeAccountSecret: string | null;
    /** FACILITATOR_MIN_AMOUNT: the smallest amount the facilitator verifies or settles (decimal). */
    minAmount: string;
    /**
     * Daily network-fee budgets per UTC day and network, stroops (issue #29): each seller
     * (FACILITATOR_SELLER_DAILY_FEE_BUDGET_STROOPS), each payer (FACILITATOR_PAYER_DAILY_FEE_BUDGET_STROOPS), each
     * anonymous client address (FACILITATOR_CLIENT_DAILY_FEE_BUDGET_STROOPS) and all sponsored fees together
     * (FACILITATOR_DAILY_FEE_CAP_STROOPS). null: unlimited, only when configured as 0.
     */
    feeBudgets: { seller: number | null; payer: number | null; client: number | null; global: number | null };
    /** SETTLEMENT_TX_TIMEOUT_SECONDS: a settlement transaction's time bound; settle waits at most this plus a grace. */
    txTimeoutSeconds: number;
    /** SETTLEMENT_CONFIRM_GRACE_MS: how long past the time bound settle keeps asking for the transaction's fate. */
    confirmGraceMs: number;
    /** RPC_TIMEOUT_MS: the deadline of one Soroban RPC call of the facilitator (verify, settle, their workers). */
    rpcTimeoutMs: number;
    /** A claim for settlement left without its settlement row this long is failed by the cleanup worker (s). */
    abandonedClaimSeconds: number;
    /** STALE_PAYMENT_CLEANUP_INTERVAL_SECONDS: the stale-payment cleanup worker's period (an Agenda interval). */
    staleCleanupEvery: string;
    /** FACILITATOR_CHANNEL_LEASE_SECONDS: a channel lease without a pinned transaction expires this long after its last
     * renewal (a killed process frees its channels then). */
    channelLeaseSeconds: number;
    /**
     * Fair capacity (issue #29): FACILITATOR_CHANNELS_PER_SELLER / _PER_PAYER / _PER_CLIENT, the channels of a network
     * one seller, payer, client holds at once across every process (null: half the pool, at least 1).
     */
    channelsPerSeller: number | null;
    channelsPerPayer: number | null;
    channelsPerClient: number | null;
    /** FACILITATOR_SETTLE_QUEUE_PER_SELLER / _PER_PAYER / _PER_CLIENT / _TOTAL: settles waiting for a channel per
     * process. */
    settleQueuePerSeller: number;
    settleQueuePerPayer: number;
    settleQueuePerClient: number;
    settleQueueTotal: number;
  };
  /** Operations: network-health and conformance-runner schedules, expected ledger close interval. */
  operations: {
    networkHealthEvery: string;
    conformanceEvery: string;
    /** A ledger that has not advanced for 3 of these is stale (Stellar: 5 s; the local network: its close interval). */
    ledgerCloseMs: number;
  };
  /** Search: SEARCH_SYNC_INTERVAL_SECONDS, how often the search-sync worker's pass runs (an Agenda interval). */
  discovery: { searchSyncEvery: string };
  /** Liveness probes (issue #33): on/off, probes per minute overall, hours dead before a listing is dropped. */
  liveness: { enabled: boolean; maxPerMinute: number; intervalMinutes: number; dropAfterHours: number };
}

export { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from './domain/network-registry';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from './domain/network-registry';

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const REPO_ROOT = path.resolve(__dirname, '../..');

type Env = Record<string, string | undefined>;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  str(name: string, fallback: string): string {
    const v = this.env[name];
    return v === undefined || v === '' ? fallback : v;
  }

  optional(name: string): string | null {
    const v = this.env[name];
    return v === undefined || v === '' ? null : v;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw.slice(0, 40)}")`);
    return fallback;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    this.problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  }

  url(name: string, protocols: string[]): string | null {
    const raw = this.optional(name);
    if (raw === null) return null;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
      return raw;
    } catch {
      this.problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return null;
    }
  }

  /** A positive decimal amount with at most 7 fractional digits. */
  amount(name: string, fallback: string): string {
    const raw = this.optional(name) ?? fallback;
    if (!isAmount(raw) || /^0(\.0+)?$/.test(raw)) {
      this.problems.push(`${name} must be a positive decimal amount with at most 7 decimals, e.g. 0.0001`);
      return fallback;
    }
    return raw;
  }

  /** A comma-separated list of Stellar secret seeds (S...). The values never appear in a message. */
  secrets(name: string): string[] {
    const raw = this.optional(name);
    if (raw === null) return [];
    const out = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (out.some((s) => !/^S[A-Z2-7]{55}$/.test(s)))
      this.problems.push(`${name} must be a comma-separated list of Stellar secret seeds (S...)`);
    return out;
  }

  /** `CODE:ISSUER,CODE:ISSUER` */
  assets(name: string, fallback: AssetConfig[]): AssetConfig[] {
    const raw = this.optional(name);
    if (raw === null) return fallback;
    const out: AssetConfig[] = [];
    for (const part of raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const m = /^([A-Za-z0-9]{1,12}):(G[A-Z2-7]{55})$/.exec(part);
      if (!m) {
        this.problems.push(`${name} must be a comma-separated list of CODE:ISSUER (bad entry "${part}")`);
        continue;
      }
      out.push({ code: m[1], issuer: m[2] });
    }
    return out;
  }
}

function budgetOrUnlimited(stroops: number): number | null {
  return stroops === 0 ? null : stroops;
}

export function loadConfig(env: Env = process.env): Config {
  const r = new Reader(env);
  const environment = r.str('APP_ENV', 'local');
  if (!/^[a-z0-9_-]{1,32}$/.test(environment)) r.problems.push('APP_ENV must match [a-z0-9_-]{1,32}');
  const dataDir = path.resolve(r.str('DATA_DIR', path.join(REPO_ROOT, '.data')));
  const localNetworkEnabled = r.bool('LOCAL_NETWORK', env.STELLAR_TESTNET_RPC_URL ? false : true);
  const testnetRpc = r.url('STELLAR_TESTNET_RPC_URL', ['http:', 'https:']);
  const pubnetRpc = r.url('STELLAR_PUBNET_RPC_URL', ['https:', 'http:']);
  if (!localNetworkEnabled && !testnetRpc && !pubnetRpc) {
    r.problems.push('with LOCAL_NETWORK=false, set STELLAR_TESTNET_RPC_URL or STELLAR_PUBNET_RPC_URL');
  }
  const networks: NetworkConfig[] = [
    {
      network: 'stellar:testnet',
      passphrase: TESTNET_PASSPHRASE,
      rpcUrl: localNetworkEnabled ? null : testnetRpc,
      assets: r.assets('STELLAR_TESTNET_ASSETS', [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] }]),
      settlementEnabled: localNetworkEnabled || testnetRpc !== null,
    },
    {
      network: 'stellar:pubnet',
      passphrase: PUBNET_PASSPHRASE,
      rpcUrl: pubnetRpc,
      assets: r.assets('STELLAR_PUBNET_ASSETS', [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }]),
      // Mainnet settlement moves real money: it is off unless an operator turns it on explicitly.
      settlementEnabled: pubnetRpc !== null && r.bool('STELLAR_PUBNET_SETTLEMENT_ENABLED', false),
    },
  ];
  const operatorApiKey = r.optional('OPERATOR_API_KEY');
  if (operatorApiKey !== null && operatorApiKey.length < 24)
    r.problems.push('OPERATOR_API_KEY must be at least 24 characters');
  const operatorApiKeyPrevious = r.optional('OPERATOR_API_KEY_PREVIOUS');
  if (operatorApiKeyPrevious !== null && operatorApiKeyPrevious.length < 24)
    r.problems.push('OPERATOR_API_KEY_PREVIOUS must be at least 24 characters');
  if (operatorApiKeyPrevious !== null && operatorApiKey === null)
    r.problems.push('OPERATOR_API_KEY_PREVIOUS needs OPERATOR_API_KEY');
  const staleCleanupSeconds = r.int('STALE_PAYMENT_CLEANUP_INTERVAL_SECONDS', DEFAULT_STALE_CLEANUP_SECONDS, 1, 3600);
  const config: Config = {
    environment,
    host: r.str('HOST', '127.0.0.1'),
    port: r.int('PORT', 3000, 0, 65535),
    webConcurrency: r.int('WEB_CONCURRENCY', 1, 1, 64),
    databaseUrl: r.url('DATABASE_URL', ['postgres:', 'postgresql:']),
    embeddedDatabaseDir: path.join(dataDir, 'postgres'),
    embeddedDatabasePort: r.int('EMBEDDED_POSTGRES_PORT', 0, 0, 65535),
    mongodbUrl: r.url('MONGODB_URL', ['mongodb:', 'mongodb+srv:']),
    operatorApiKey,
    operatorApiKeyPrevious,
    operatorKeyFile: path.join(dataDir, 'operator-api-key'),
    receiptSigning: {
      key: r.optional('RECEIPT_SIGNING_KEY')?.replace(/\\n/g, '\n') ?? null,
      keyFile: path.join(dataDir, 'receipt-signing-key.pem'),
      previousKeys: r.optional('RECEIPT_PREVIOUS_PUBLIC_KEYS'),
      previousKeysFile: path.join(dataDir, 'receipt-signing-keys-previous.json'),
    },
    rateLimit: {
      points: r.int('RATE_LIMIT_REQUESTS', 300, 1, 1_000_000),
      windowSeconds: r.int('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    },
    retention: {
      failedAttemptsDays: r.int('RETENTION_FAILED_ATTEMPTS_DAYS', 30, 1, 3650),
      every: `${r.int('RETENTION_INTERVAL_MINUTES', 10, 1, 1440)} minutes`,
    },
    challengeLimit: {
      perClient: r.int('SIGNUP_CHALLENGES_PER_HOUR_PER_CLIENT', 60, 1, 1_000_000),
      perWallet: r.int('SIGNUP_CHALLENGES_PER_HOUR_PER_WALLET', 10, 1, 1_000_000),
    },
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', 256 * 1024, 1024, 16 * 1024 * 1024),
    statementTimeoutMs: r.int('DATABASE_STATEMENT_TIMEOUT_MS', 15_000, 0, 600_000),
    databasePoolMax: r.int('DATABASE_POOL_MAX', DEFAULT_POOL_MAX, 1, MAX_POOL_MAX),
    localNetwork: {
      enabled: localNetworkEnabled,
      host: r.str('LOCAL_NETWORK_HOST', '127.0.0.1'),
      port: r.int('LOCAL_NETWORK_PORT', 8000, 0, 65535),
      ledgerCloseMs: r.int('LOCAL_NETWORK_LEDGER_CLOSE_MS', 5000, 0, 600_000),
      dataFile: path.resolve(r.str('LOCAL_NETWORK_DATA_FILE', path.join(dataDir, 'local-network.json'))),
      primaryRpcUrl: r.url('LOCAL_NETWORK_PRIMARY_RPC_URL', ['http:', 'https:']),
    },
    networks,
    domainVerificationTestMode: r.bool('DOMAIN_VERIFICATION_TEST_MODE', false),
    localDevDomains: {
      enabled: r.bool('LOCAL_DEV_DOMAINS', false),
      port: r.int('LOCAL_DEV_DOMAINS_PORT', 8402, 1, 65535),
    },
    responseValidation: r.bool('RESPONSE_VALIDATION', false),
    version: r.str('SERVICE_VERSION', readPackageVersion()),
    commit: r.optional('GIT_COMMIT'),
    logRequests: r.bool('LOG_REQUESTS', false),
    serverTiming: r.bool('SERVER_TIMING', false),
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    facilitator: {
      channelAccounts: r.int('FACILITATOR_CHANNEL_ACCOUNTS', DEFAULT_CHANNEL_ACCOUNTS, 1, 256),
      channelSecrets: {
        'stellar:testnet': r.secrets('STELLAR_TESTNET_CHANNEL_SECRETS'),
        'stellar:pubnet': r.secrets('STELLAR_PUBNET_CHANNEL_SECRETS'),
      },
      channelSeedFile: path.join(dataDir, 'channel-seed'),
      maxFeeStroops: r.int('FACILITATOR_MAX_FEE_STROOPS', DEFAULT_MAX_FEE_STROOPS, 100, 100_000_000),
      maxInclusionFeeStroops: r.int('FACILITATOR_MAX_INCLUSION_FEE_STROOPS', 10_000, 100, 100_000_000),
      maxResourceFeeStroops: r.int('FACILITATOR_MAX_RESOURCE_FEE_STROOPS', 500_000, 0, 100_000_000),
      inclusionFeePercentile: r.oneOf('FACILITATOR_INCLUSION_FEE_PERCENTILE', FEE_PERCENTILES, 'p90'),
      feeStatsTtlMs: r.int('FACILITATOR_FEE_STATS_TTL_MS', 5000, 0, 60_000),
      feeAccountSecret: r.secrets('FACILITATOR_FEE_ACCOUNT_SECRET')[0] ?? null,
      minAmount: r.amount('FACILITATOR_MIN_AMOUNT', DEFAULT_MIN_AMOUNT),
      feeBudgets: {
        seller: budgetOrUnlimited(
          r.int('FACILITATOR_SELLER_DAILY_FEE_BUDGET_STROOPS', DEFAULT_FEE_BUDGETS.seller, 0, 1_000_000_000_000),
        ),
        payer: budgetOrUnlimited(
          r.int('FACILITATOR_PAYER_DAILY_FEE_BUDGET_STROOPS', DEFAULT_FEE_BUDGETS.payer, 0, 1_000_000_000_000),
        ),
        client: budgetOrUnlimited(
          r.int('FACILITATOR_CLIENT_DAILY_FEE_BUDGET_STROOPS', DEFAULT_FEE_BUDGETS.client, 0, 1_000_000_000_000),
        ),
        global: budgetOrUnlimited(
          r.int('FACILITATOR_DAILY_FEE_CAP_STROOPS', DEFAULT_FEE_BUDGETS.global, 0, 1_000_000_000_000),
        ),
      },
      txTimeoutSeconds: r.int('SETTLEMENT_TX_TIMEOUT_SECONDS', DEFAULT_TX_TIMEOUT_SECONDS, 5, 300),
      confirmGraceMs: r.int('SETTLEMENT_CONFIRM_GRACE_MS', DEFAULT_CONFIRM_GRACE_MS, 1000, 300_000),
      rpcTimeoutMs: r.int('RPC_TIMEOUT_MS', DEFAULT_RPC_TIMEOUT_MS, 1000, 60_000),
      abandonedClaimSeconds: r.int('FACILITATOR_ABANDONED_CLAIM_SECONDS', DEFAULT_ABANDONED_CLAIM_SECONDS, 5, 86_400),
      staleCleanupEvery: `${staleCleanupSeconds} seconds`,
      channelLeaseSeconds: r.int('FACILITATOR_CHANNEL_LEASE_SECONDS', DEFAULT_CHANNEL_LEASE_SECONDS, 3, 600),
      channelsPerSeller:
        r.optional('FACILITATOR_CHANNELS_PER_SELLER') === null
          ? null
          : r.int('FACILITATOR_CHANNELS_PER_SELLER', 1, 1, 256),
      channelsPerPayer:
        r.optional('FACILITATOR_CHANNELS_PER_PAYER') === null
          ? null
          : r.int('FACILITATOR_CHANNELS_PER_PAYER', 1, 1, 256),
      channelsPerClient:
        r.optional('FACILITATOR_CHANNELS_PER_CLIENT') === null
          ? null
          : r.int('FACILITATOR_CHANNELS_PER_CLIENT', 1, 1, 256),
      settleQueuePerSeller: r.int('FACILITATOR_SETTLE_QUEUE_PER_SELLER', 4, 0, 10_000),
      settleQueuePerPayer: r.int('FACILITATOR_SETTLE_QUEUE_PER_PAYER', 4, 0, 10_000),
      settleQueuePerClient: r.int('FACILITATOR_SETTLE_QUEUE_PER_CLIENT', 4, 0, 10_000),
      settleQueueTotal: r.int('FACILITATOR_SETTLE_QUEUE_TOTAL', 64, 0, 100_000),
    },
    operations: {
      networkHealthEvery: `${r.int('NETWORK_HEALTH_INTERVAL_SECONDS', 10, 1, 3600)} seconds`,
      conformanceEvery: `${r.int('CONFORMANCE_INTERVAL_MINUTES', 60, 1, 10_080)} minutes`,
      ledgerCloseMs: r.int('LEDGER_CLOSE_MS', 5000, 100, 600_000),
    },
    discovery: {
      searchSyncEvery: `${r.int('SEARCH_SYNC_INTERVAL_SECONDS', DEFAULT_SEARCH_SYNC_SECONDS, 1, 3600)} seconds`,
    },
    liveness: {
      enabled: r.bool('LIVENESS_PROBES', true),
      // 100k listings every 16.7 minutes, so a listing that stops answering is demoted within 30 (server/README.md)
      maxPerMinute: r.int('LIVENESS_MAX_PER_MINUTE', 6000, 1, 100_000),
      intervalMinutes: r.int('LIVENESS_INTERVAL_MINUTES', 5, 1, 24 * 60),
      dropAfterHours: r.int('LIVENESS_DROP_AFTER_HOURS', 24, 1, 24 * 90),
    },
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}

function readPackageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../package.json') as { version: string }).version;
}
