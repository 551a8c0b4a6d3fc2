/**
 * One call that tells a seller whether its wallet can be paid: for every asset the marketplace accepts (GET
 * /v1/networks), does the account exist on that network, and does it hold a trustline to the asset? A wallet
 * without the trustline cannot receive the asset, so every buyer's payment to it is refused (TRUSTLINE_REQUIRED).
 * Read-only: it reads two ledger entries per asset through the network's Soroban RPC (getLedgerEntries, by the one
 * Soroban RPC reader of the SDK core) and signs nothing.
 */
import { Asset, Keypair, StrKey, xdr } from '@stellar/stellar-sdk';
import { createLedgerReader, ledgerEntriesFound, type LedgerReader } from '../core/soroban-rpc.js';

export interface WalletReadinessOptions {
  /** The marketplace API, e.g. http://127.0.0.1:3000 (its GET /v1/networks lists the networks, RPCs and assets). */
  baseUrl: string;
  /** The wallet to check (`G...`): usually the seller's walletAddress, the payTo of its resources. */
  walletAddress: string;
  /** Only this network (default: every network the marketplace lists with an RPC). */
  network?: string;
  /** The Soroban RPC per network, when the listed one (scheme and host only) is not enough, e.g. a provider URL with a
   * key. */
  rpcUrl?: string | Partial<Record<string, string>>;
  fetch?: typeof globalThis.fetch;
  /** Per request. Default 5000 ms. */
  timeoutMs?: number;
}

export interface WalletAssetReadiness {
  network: string;
  asset: { code: string; issuer: string };
  /** The account exists on the network. */
  account: boolean;
  /** It holds a trustline to the asset (or is its issuer). */
  trustline: boolean;
  ready: boolean;
  /** What to do when not ready; null when ready. */
  fix: string | null;
}

export interface WalletReadiness {
  walletAddress: string;
  /** Every listed asset on every checked network can be received. */
  ready: boolean;
  checks: WalletAssetReadiness[];
}

interface ListedNetwork {
  network: string;
  rpcUrl: string | null;
  assets: Array<{ code: string; issuer: string }>;
}

export async function checkWalletReadiness(opts: WalletReadinessOptions): Promise<WalletReadiness> {
  if (!StrKey.isValidEd25519PublicKey(opts.walletAddress))
    throw new TypeError('walletAddress must be a Stellar account address (G..., 56 characters)');
  const doFetch = opts.fetch ?? globalThis.fetch;
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const res = await doFetch(`${opts.baseUrl.replace(/\/+$/, '')}/v1/networks`, {
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) throw new Error(`GET /v1/networks answered HTTP ${res.status}`);
  const listed = ((await res.json()) as { items: ListedNetwork[] }).items.filter((n) =>
    opts.network ? n.network === opts.network : true,
  );
  const rpcFor = (n: ListedNetwork) =>
    typeof opts.rpcUrl === 'string' ? opts.rpcUrl : (opts.rpcUrl?.[n.network] ?? n.rpcUrl);
  const rpcUrls = new Map(listed.map((n) => [n.network, rpcFor(n)]));
  const ledger = createLedgerReader((network) => rpcUrls.get(network) ?? '', { fetch: doFetch, timeoutMs });
  const checks: WalletAssetReadiness[] = [];
  for (const n of listed) {
    if (!rpcUrls.get(n.network)) continue;
    for (const asset of n.assets) checks.push(await checkOne(ledger, n.network, opts.walletAddress, asset));
  }
  return { walletAddress: opts.walletAddress, ready: checks.length > 0 && checks.every((c) => c.ready), checks };
}

async function checkOne(
  ledger: LedgerReader,
  network: string,
  address: string,
  asset: { code: string; issuer: string },
): Promise<WalletAssetReadiness> {
  const accountId = Keypair.fromPublicKey(address).xdrAccountId();
  const accountKey = xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId })).toXDR('base64');
  const trustKey = xdr.LedgerKey.trustline(
    new xdr.LedgerKeyTrustLine({ accountId, asset: new Asset(asset.code, asset.issuer).toTrustLineXDRObject() }),
  ).toXDR('base64');
  const isIssuer = address === asset.issuer;
  const found = await ledgerEntriesFound(ledger, network, isIssuer ? [accountKey] : [accountKey, trustKey]).catch(
    (err: Error) => Promise.reject(new Error(`the Soroban RPC of ${network} refused: ${err.message}`)),
  );
  const account = found.has(accountKey);
  const trustline = isIssuer ? account : found.has(trustKey);
  const ready = account && trustline;
  const name = `${asset.code} issued by ${asset.issuer}`;
  const fix = ready
    ? null
    : !account
      ? `The account does not exist on ${network}: fund it with XLM (it needs a minimum balance), then add a ` +
        `trustline to ${name}.`
      : `Add a trustline to ${name} (a changeTrust operation signed by the wallet) so it can receive ` +
        `${asset.code} on ${network}.`;
  return { network, asset: { code: asset.code, issuer: asset.issuer }, account, trustline, ready, fix };
}
