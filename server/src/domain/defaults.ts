/**
 * The defaults of the settings config.ts reads, written once. config.ts owns them (it reads each from the
 * environment with the default named here); the wiring (areas/, compose.ts) and the domain import them from here
 * because the import rule keeps them from importing config.ts. Change a default here, and only here.
 */

/** FACILITATOR_CHANNEL_ACCOUNTS: channel accounts per network created at start on the local network. */
export const DEFAULT_CHANNEL_ACCOUNTS = 4;
/** FACILITATOR_MAX_FEE_STROOPS: highest total fee of a settlement transaction, stroops (0.1 XLM). */
export const DEFAULT_MAX_FEE_STROOPS = 1_000_000;
/** FACILITATOR_MIN_AMOUNT: the smallest amount the facilitator verifies or settles and the catalog prices. */
export const DEFAULT_MIN_AMOUNT = '0.0001';
/** SETTLEMENT_TX_TIMEOUT_SECONDS: a settlement transaction's time bound. */
export const DEFAULT_TX_TIMEOUT_SECONDS = 30;
/**
 * SETTLEMENT_CONFIRM_GRACE_MS: how long past a settlement transaction's time bound settle (and the retry of an x402
 * `settlement_pending` answer) keeps asking the ledger for its fate before answering pending.
 */
export const DEFAULT_CONFIRM_GRACE_MS = 10_000;
/**
 * RPC_TIMEOUT_MS: the deadline of one Soroban RPC call made for verify, settle and their workers (the JSON-RPC client
 * destroys the request when it passes; a submission cut off this way stays pending for the confirmation worker).
 */
export const DEFAULT_RPC_TIMEOUT_MS = 8000;
/** SEARCH_SYNC_INTERVAL_SECONDS: how often the search-sync worker's pass runs. */
export const DEFAULT_SEARCH_SYNC_SECONDS = 30;
/**
 * STALE_PAYMENT_CLEANUP_INTERVAL_SECONDS: how often the stale-payment cleanup worker expires verified attempts whose
 * authorization expired and fails abandoned settlement claims.
 */
export const DEFAULT_STALE_CLEANUP_SECONDS = 60;
/** FACILITATOR_ABANDONED_CLAIM_SECONDS: a claim left without its settlement row this long is failed by the worker. */
export const DEFAULT_ABANDONED_CLAIM_SECONDS = 120;
/** FACILITATOR_CHANNEL_LEASE_SECONDS: a channel lease without a pinned transaction expires this long after renewal. */
export const DEFAULT_CHANNEL_LEASE_SECONDS = 15;

/**
 * The maxTimeoutSeconds the catalog and the Bazaar announce for every resource, and the one verify assumes when the
 * requirements carry none (a cataloged resource's payment is never allowed longer).
 */
export const MAX_TIMEOUT_SECONDS = 300;
/** No authorization may stay valid longer than this, whatever the requirements say. */
export const MAX_TIMEOUT_CAP_SECONDS = 3600;
