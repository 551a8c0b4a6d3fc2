import { Networks } from '@stellar/stellar-sdk';

/** The local network serves stellar:testnet: same passphrase, so clients cannot tell it from testnet by protocol. */
export const NETWORK_PASSPHRASE = Networks.TESTNET;
export const FRIENDBOT_PATH = '/friendbot';
export const PROTOCOL_VERSION = 23;
export const RPC_VERSION = '23.0.0-local-simulation';

/** Minimum inclusion fee per operation, in stroops (network setting `baseFee`). */
export const BASE_FEE = 100n;
/** Reserve per ledger entry, in stroops (0.5 XLM, network setting `baseReserve`). */
export const BASE_RESERVE = 5_000_000n;
/** Accounts start at this many stroops of reserve before sub-entries: (2 + numSubEntries) * BASE_RESERVE. */
export const ACCOUNT_BASE_RESERVE_ENTRIES = 2n;
/** The trustline limit used when a changeTrust omits one and for faucet trustlines: INT64_MAX. */
export const MAX_INT64 = 9_223_372_036_854_775_807n;
/** How many ledgers of transactions and events the RPC keeps (testnet RPC keeps about a day: 17280). */
export const LEDGER_RETENTION_WINDOW = 17_280;
/** Soroban temporary entries (nonces) may not be set to live longer than this many ledgers (network max TTL). */
export const MAX_ENTRY_TTL = 3_110_400;
/** Lifetime reported for persistent contract entries (SAC instance, contract balances). */
export const PERSISTENT_ENTRY_TTL = 2_073_600;
/** Number of decimals of every Stellar asset contract and of XLM. */
export const ASSET_DECIMALS = 7;
