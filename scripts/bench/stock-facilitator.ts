/**
 * The baseline of bench:verify: the stock `@x402/stellar` exact-scheme facilitator (`ExactStellarScheme` from
 * `@x402/stellar/exact/facilitator`), unchanged, behind the thinnest HTTP server (node:http, keep-alive):
 * `POST /verify {paymentPayload, paymentRequirements}` answers `facilitator.verify(...)` as JSON. Started by the
 * bench in its own process. Environment: STOCK_RPC_URL (the local network), STOCK_FACILITATOR_SECRET.
 *
 * Its verify asks Horizon on the internet for the ledger close time on every call
 * (getEstimatedLedgerCloseTimeSeconds). Benches stay on loopback, so DNS lookups of anything but loopback names are
 * refused inside this process: that call fails at once and the facilitator uses its 5-second default. The baseline
 * is therefore FASTER than the stock facilitator against the real testnet (no internet round trip per verify).
 */
import dns from 'node:dns';
import http from 'node:http';
import type { LookupFunction } from 'node:net';

let refusedLookups = 0;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);
const lookup = dns.lookup as unknown as (...args: unknown[]) => void;
(dns as { lookup: unknown }).lookup = ((hostname: string, ...rest: unknown[]) => {
  const callback = rest[rest.length - 1] as (err: NodeJS.ErrnoException | null) => void;
  if (LOOPBACK.has(hostname)) return lookup(hostname, ...rest);
  refusedLookups++;
  const err: NodeJS.ErrnoException = new Error(`bench: lookup of ${hostname} refused (loopback only)`);
  err.code = 'ENOTFOUND';
  process.nextTick(() => callback(err));
}) as LookupFunction;
(dns.promises as { lookup: unknown }).lookup = async (hostname: string, ...rest: unknown[]) => {
  if (LOOPBACK.has(hostname)) return (dns.promises.lookup as (...a: unknown[]) => unknown)(hostname, ...rest);
  refusedLookups++;
  const err: NodeJS.ErrnoException = new Error(`bench: lookup of ${hostname} refused (loopback only)`);
  err.code = 'ENOTFOUND';
  throw err;
};

async function main() {
  const { createEd25519Signer } = await import('@x402/stellar');
  const { ExactStellarScheme } = await import('@x402/stellar/exact/facilitator');
  const rpcUrl = process.env.STOCK_RPC_URL;
  const secret = process.env.STOCK_FACILITATOR_SECRET;
  if (!rpcUrl || !secret) throw new Error('STOCK_RPC_URL and STOCK_FACILITATOR_SECRET are required');
  const facilitator = new ExactStellarScheme([createEd25519Signer(secret, 'stellar:testnet')], {
    rpcConfig: { url: rpcUrl },
  });
  type Args = Parameters<typeof facilitator.verify>;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res
          .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
          .end(text);
      };
      if (req.method === 'GET' && req.url === '/stats') return reply(200, { refusedLookups });
      if (req.method !== 'POST' || req.url !== '/verify') return reply(404, { error: 'not found' });
      let body: { paymentPayload: Args[0]; paymentRequirements: Args[1] };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(400, { error: 'invalid JSON' });
      }
      facilitator.verify(body.paymentPayload, body.paymentRequirements).then(
        (answer) => reply(200, answer),
        (err: Error) => reply(500, { error: err.message }),
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    console.log(`stock facilitator listening on http://127.0.0.1:${(server.address() as { port: number }).port}`);
  });
  process.on('SIGTERM', () => (server.closeAllConnections(), server.close(() => process.exit(0))));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
