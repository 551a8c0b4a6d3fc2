/**
 * Two conveniences of the LOCAL network only (nothing here exists on testnet or mainnet):
 *
 * - `fundWallet`: the local network's friendbot (`GET /friendbot?addr=G...`: creates the account with XLM) and its
 *   faucet (`POST /faucet`: adds the USDC trustline when missing and pays USDC from the network's treasury).
 *   On testnet you would use https://friendbot.stellar.org and Circle's testnet USDC faucet instead.
 * - `localDevFetch`: seller domains must be real domain names (the marketplace refuses `localhost` and IPs), so the
 *   quickstart's seller uses a name under `.test` (RFC 2606, reserved for testing). Nothing resolves `.test`, so this
 *   fetch sends `*.test` hosts to 127.0.0.1, where the quickstart's seller app listens. Everything else goes out
 *   unchanged. Give it to the buyer SDK as `fetch`; a real seller on a real domain needs nothing like it. Both SDKs
 *   export it (`import { localDevFetch } from '@paid-api-marketplace/sdk-buyer'`, or `.../sdk-seller`).
 */

/** Where the local network's friendbot and faucet answer (`npm start` runs it on 127.0.0.1:8000). */
export const LOCAL_NETWORK_URL = process.env.LOCAL_NETWORK_URL ?? 'http://127.0.0.1:8000';

/** Creates the account (friendbot) and, when `usdc` is given, adds the USDC trustline and pays that much (faucet). */
export async function fundWallet(address: string, usdc?: string): Promise<void> {
  const bot = await fetch(`${LOCAL_NETWORK_URL}/friendbot?addr=${encodeURIComponent(address)}`);
  if (!bot.ok && bot.status !== 400) throw new Error(`friendbot answered HTTP ${bot.status}: ${await bot.text()}`);
  if (usdc === undefined) return;
  const faucet = await fetch(`${LOCAL_NETWORK_URL}/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address, asset: 'USDC', amount: usdc }),
  });
  if (!faucet.ok) throw new Error(`faucet answered HTTP ${faucet.status}: ${await faucet.text()}`);
}

/** fetch, with `*.test` hosts sent to 127.0.0.1 (same port, same path): both SDKs export it. */
export { localDevFetch } from '@paid-api-marketplace/sdk-buyer';

/** Prints one step: what it does and which API call(s) it makes. */
export function step(n: number | string, what: string, calls: string): void {
  console.log(`\n[${n}] ${what}\n    -> ${calls}`);
}
