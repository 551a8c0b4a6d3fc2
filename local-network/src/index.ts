import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import { formatAmount, toStroops } from './amount';
import { AssetRegistry, IssuedAssetInput } from './asset-registry';
import { NETWORK_PASSPHRASE } from './constants';
import { createLocalNetworkApp, listen } from './http-server';
import { LocalLedger, type FeeProfile } from './local-ledger';
import {
  MigratedAsset,
  PersistedNetwork,
  loadNetworkState,
  migrateReissuedAssets,
  saveNetworkState,
} from './persistence';
import { TESTNET_USDC } from './testnet-assets';
import { createSelfSignedCertificate } from './tls-certificate';

/**
 * A local Stellar network simulator that speaks Soroban RPC (see README.md). Everything it shows is
 * "local simulation": it serves the testnet passphrase so stock clients work unchanged, but no real network
 * is involved.
 */

export interface LocalAssetConfig {
  code: string;
  /**
   * The issuer's account id. USDC defaults to Circle's testnet issuer (the network is testnet's twin: the same
   * asset and the same SAC contract id); another code without an issuer gets one generated (or reloaded from the
   * data file). A hosted issuer has no secret here: the faucet pays from the root treasury.
   */
  issuer?: string;
  /** For a generated-style issuer whose secret you hold (must match `issuer` when both are given). */
  issuerSecret?: string;
}

export interface LocalNetworkOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8000; 0 picks a free port. */
  port?: number;
  /** Default 5000; 0 means ledgers close only through closeLedger(). */
  ledgerCloseMs?: number;
  /** When set, the ledger and the network's keys persist there across restarts. */
  dataFile?: string;
  /** Default [{ code: 'USDC' }]: Circle's testnet USDC (TESTNET_USDC). */
  assets?: LocalAssetConfig[];
  /** XLM friendbot gives a new account. Default '10000'. */
  friendbotXlm?: string;
  /**
   * Serve HTTPS with a freshly generated self-signed certificate (see `certificatePem`). Needed by clients that
   * refuse plain-HTTP RPC URLs, such as the @x402/stellar exact client. Default false.
   */
  tls?: boolean;
  /** Fee profile at start: 'pubnet' reproduces pubnet's Soroban fee distribution (see setFeeProfile). Default 'local'.
   * */
  feeProfile?: FeeProfile;
}

export interface LocalNetworkAsset {
  code: string;
  issuer: string;
  /** new Asset(code, issuer).contractId(networkPassphrase) */
  contractId: string;
}

export interface LocalNetwork {
  /** http://host:port/rpc */
  rpcUrl: string;
  /** http://host:port */
  baseUrl: string;
  /** Networks.TESTNET: it serves stellar:testnet. */
  networkPassphrase: string;
  assets: LocalNetworkAsset[];
  /** Only for issuers this network generated; undefined for a hosted asset (Circle's testnet USDC). */
  issuerSecret(code: string): string | undefined;
  latestLedger(): number;
  /** Closes one ledger now, applying queued transactions; resolves to the new sequence. */
  closeLedger(): Promise<number>;
  /** Same as friendbot: creates the account with `xlm` (default friendbotXlm). */
  fundAccount(address: string, xlm?: string): Promise<void>;
  /**
   * Creates the account if missing, adds the trustline if missing, credits `amount` of `assetCode`. For a
   * contract address (C...) it is a SAC transfer from the treasury into the contract's balance.
   */
  faucet(address: string, assetCode: string, amount: string): Promise<void>;
  /** Decimal string, '0' when none. */
  balance(address: string, assetCode: string | 'XLM'): string;
  hasTrustline(address: string, assetCode: string): boolean;
  /**
   * Moves the network clock forward by `seconds` (local convenience): the next ledger closes that much later, so
   * tests can pass a transaction's maxTime without waiting.
   */
  advanceClock(seconds: number): void;
  /**
   * Deploys the built-in ed25519 account contract for `publicKey` (G...) and resolves to its contract id (C...),
   * the same for the same key (local convenience; same as POST /contract-account {"publicKey"}). Its
   * __check_auth accepts a signature ScVal bytes(64): the ed25519 signature of the 32-byte Soroban authorization
   * payload by that key. Fund it with faucet(contractId, 'USDC', amount).
   */
  deployContractAccount(publicKey: string): Promise<string>;
  /**
   * Freezes (false) or unfreezes (true) `address`'s trustline of `assetCode` as the issuer would with
   * setTrustLineFlags (local convenience; same as POST /trustline-flags {"address","asset","authorized"}).
   * Resolves to the transaction hash when the network holds the issuer's key, else undefined (hosted issuer:
   * the rule is applied to the ledger directly).
   */
  setTrustlineAuthorized(address: string, assetCode: string, authorized: boolean): Promise<string | undefined>;
  /**
   * Surge pricing (local convenience): transactions bidding less than `stroops` of inclusion fee per operation
   * are refused with txInsufficientFee, the fee charged becomes this minimum, and getFeeStats reports at least it.
   * Back to normal with setMinimumInclusionFee(100). Same as POST /surge {"minInclusionFee": "500"}.
   */
  setMinimumInclusionFee(stroops: number | bigint): void;
  /**
   * Fee profile (local convenience): 'pubnet' reproduces pubnet's Soroban fee distribution (getFeeStats'
   * sorobanInclusionFee p10-p99 at 200 stroops, Soroban bids below 200 refused); 'local' goes back to the network's
   * own traffic. Same as POST /fee-profile {"profile": "pubnet"} and the option feeProfile.
   */
  setFeeProfile(profile: FeeProfile): void;
  /** Assets whose balances were moved from an old data file's local issuer to the hosted issuer at start. */
  migrated: MigratedAsset[];
  /** The self-signed certificate when started with `tls: true` (trust it with trustCertificate()). */
  certificatePem?: string;
  stop(): Promise<void>;
}

export { createSelfSignedCertificate, trustCertificate } from './tls-certificate';
export type { MigratedAsset } from './persistence';
export { TESTNET_USDC } from './testnet-assets';

const DEFAULTS = {
  host: '127.0.0.1',
  port: 8000,
  ledgerCloseMs: 5000,
  assets: [{ code: 'USDC' }],
  friendbotXlm: '10000',
};

function resolveIssuers(configured: LocalAssetConfig[], persisted: PersistedNetwork | undefined): IssuedAssetInput[] {
  return configured.map(({ code, issuer, issuerSecret }) => {
    const saved = persisted?.issuers.find((i) => i.code.toUpperCase() === code.toUpperCase());
    if (issuerSecret)
      return {
        code,
        issuer: issuer ?? Keypair.fromSecret(issuerSecret).publicKey(),
        issuerKeypair: Keypair.fromSecret(issuerSecret),
      };
    const hosted = issuer ?? (code.toUpperCase() === TESTNET_USDC.code ? TESTNET_USDC.issuer : undefined);
    if (hosted)
      return saved && Keypair.fromSecret(saved.secret).publicKey() === hosted
        ? { code, issuer: hosted, issuerKeypair: Keypair.fromSecret(saved.secret) }
        : { code, issuer: hosted };
    const keypair = saved ? Keypair.fromSecret(saved.secret) : Keypair.random();
    return { code, issuer: keypair.publicKey(), issuerKeypair: keypair };
  });
}

export async function startLocalNetwork(opts: LocalNetworkOptions = {}): Promise<LocalNetwork> {
  const host = opts.host ?? DEFAULTS.host;
  const ledgerCloseMs = opts.ledgerCloseMs ?? DEFAULTS.ledgerCloseMs;
  const friendbotStroops = toStroops(opts.friendbotXlm ?? DEFAULTS.friendbotXlm);
  const persisted = opts.dataFile ? loadNetworkState(opts.dataFile) : undefined;
  if (persisted && persisted.passphrase !== NETWORK_PASSPHRASE)
    throw new Error(`${opts.dataFile} holds another network's state`);

  const issuers = resolveIssuers(opts.assets ?? DEFAULTS.assets, persisted);
  const root = persisted ? Keypair.fromSecret(persisted.rootSecret) : Keypair.random();
  const registry = new AssetRegistry(NETWORK_PASSPHRASE, issuers);
  // A data file from before the network hosted Circle's USDC holds balances of a locally issued USDC: they are
  // moved to the hosted asset (same code, new issuer) so wallets keep their funds; history stays as it was.
  const migrated = persisted ? migrateReissuedAssets(persisted, registry) : [];
  const ledger = new LocalLedger(NETWORK_PASSPHRASE, registry, root, persisted?.ledger);
  if (opts.feeProfile) ledger.setFeeProfile(opts.feeProfile);

  const persist = (): void => {
    if (!opts.dataFile) return;
    saveNetworkState(opts.dataFile, {
      version: 1,
      passphrase: NETWORK_PASSPHRASE,
      rootSecret: root.secret(),
      issuers: issuers.flatMap((i) => (i.issuerKeypair ? [{ code: i.code, secret: i.issuerKeypair.secret() }] : [])),
      ledger: ledger.snapshot(),
    });
  };
  persist();

  const assets: LocalNetworkAsset[] = registry
    .issued()
    .map((a) => ({ code: a.code, issuer: a.issuer, contractId: a.contractId }));
  let baseUrl = '';
  const app = createLocalNetworkApp({
    ledger,
    friendbotStroops,
    onChange: persist,
    describe: () => ({
      rpcUrl: `${baseUrl}/rpc`,
      networkPassphrase: NETWORK_PASSPHRASE,
      latestLedger: ledger.latest.sequence,
      ledgerCloseMs,
      assets,
    }),
  });
  const tls = opts.tls ? await createSelfSignedCertificate([host]) : undefined;
  const server: http.Server = await listen(app, host, opts.port ?? DEFAULTS.port, tls);
  const { port } = server.address() as AddressInfo;
  baseUrl = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const close = (): number => {
    const sequence = ledger.closeLedger();
    persist();
    return sequence;
  };
  const timer = ledgerCloseMs > 0 ? setInterval(close, ledgerCloseMs) : undefined;
  let stopped = false;

  return {
    rpcUrl: `${baseUrl}/rpc`,
    baseUrl,
    networkPassphrase: NETWORK_PASSPHRASE,
    assets,
    issuerSecret: (code) => registry.issuerKeypair(code)?.secret(),
    migrated,
    latestLedger: () => ledger.latest.sequence,
    closeLedger: async () => close(),
    fundAccount: async (address, xlm) => {
      ledger.friendbot(address, xlm === undefined ? friendbotStroops : toStroops(xlm));
      persist();
    },
    faucet: async (address, assetCode, amount) => {
      ledger.faucet(address, assetCode, toStroops(amount), friendbotStroops);
      persist();
    },
    balance: (address, assetCode) => formatAmount(ledger.balance(address, assetCode)),
    hasTrustline: (address, assetCode) => ledger.hasTrustline(address, assetCode),
    advanceClock: (seconds) => ledger.advanceClock(seconds),
    deployContractAccount: async (publicKey) => {
      const contractId = ledger.deployContractAccount(publicKey);
      persist();
      return contractId;
    },
    setTrustlineAuthorized: async (address, assetCode, authorized) => {
      const txHash = ledger.setTrustlineAuthorized(address, assetCode, authorized);
      persist();
      return txHash;
    },
    setMinimumInclusionFee: (stroops) => ledger.setMinimumInclusionFee(BigInt(stroops)),
    setFeeProfile: (profile) => ledger.setFeeProfile(profile),
    certificatePem: tls?.certPem,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      persist();
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
