/**
 * A buyer process for budget-across-processes.test.ts, run with `node --import tsx`. Modes:
 *
 * - `pay <baseUrl> <url> <secret> <storeFile> <tries>`: a buyer client with `{ perCall: 0.05, total: 0.1 }` on the
 *   shared FileBudgetStore; prints `ready`, waits for a line on stdin, then tries `tries` paid calls at once and
 *   prints their outcomes as one JSON line.
 * - `hold <storeFile> <staleMs>`: takes the store's lock, prints `locked` and never lets go (the test kills it).
 */
import { Keypair } from '@stellar/stellar-sdk';
import { BudgetExceededError, createBuyerClient, FileBudgetStore } from '../../src';

async function pay([baseUrl, url, secret, file, tries]: string[]): Promise<void> {
  const buyer = createBuyerClient({
    baseUrl,
    payment: {
      signer: Keypair.fromSecret(secret),
      budget: { perCall: '0.05', total: '0.1', store: new FileBudgetStore(file) },
      validForLedgers: 40,
    },
  });
  await buyer.networks.list();
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const outcomes = await Promise.all(
    Array.from({ length: Number(tries) }, () =>
      buyer.payAndFetch(url).then(
        (r) => `signed (status ${r.response.status})`,
        (e: unknown) => (e instanceof BudgetExceededError ? 'BUDGET_EXCEEDED' : `error: ${(e as Error).message}`),
      ),
    ),
  );
  process.stdout.write(`${JSON.stringify(outcomes)}\n`);
}

async function hold([file, staleMs]: string[]): Promise<void> {
  await new FileBudgetStore(file, { staleMs: Number(staleMs) }).update(() => {
    process.stdout.write('locked\n');
    setInterval(() => undefined, 1000); // stays alive (busy elsewhere) until killed
    return new Promise<never>(() => undefined);
  });
}

const [mode, ...args] = process.argv.slice(2);
(mode === 'pay' ? pay(args) : hold(args)).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
