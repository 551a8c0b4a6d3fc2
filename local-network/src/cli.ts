#!/usr/bin/env node
import fs from 'node:fs';
import path from 'node:path';
import { startLocalNetwork } from './index';

/**
 * Standalone runner: `npm run local-network` at the repository root, or the package's `local-network` bin (the build).
 * Environment: LOCAL_NETWORK_HOST (127.0.0.1), LOCAL_NETWORK_PORT (8000), LOCAL_NETWORK_LEDGER_CLOSE_MS (5000),
 * LOCAL_NETWORK_DATA_FILE (.data/local-network.json at the repository root), LOCAL_NETWORK_TLS (set to 1 to serve
 * HTTPS; the certificate is written next to the data file), LOCAL_NETWORK_FEE_PROFILE (`pubnet` for pubnet's fees).
 * Prints what clients need, including the issuer secrets (only here). Stops cleanly on SIGINT/SIGTERM.
 */

function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

async function main(): Promise<void> {
  const dataFile = path.resolve(
    process.env.LOCAL_NETWORK_DATA_FILE || path.join(__dirname, '../../.data/local-network.json'),
  );
  const tls = process.env.LOCAL_NETWORK_TLS === '1' || process.env.LOCAL_NETWORK_TLS === 'true';
  const network = await startLocalNetwork({
    host: process.env.LOCAL_NETWORK_HOST || '127.0.0.1',
    port: intFromEnv('LOCAL_NETWORK_PORT', 8000),
    ledgerCloseMs: intFromEnv('LOCAL_NETWORK_LEDGER_CLOSE_MS', 5000),
    dataFile,
    tls,
    feeProfile: process.env.LOCAL_NETWORK_FEE_PROFILE === 'pubnet' ? 'pubnet' : 'local',
  });
  for (const m of network.migrated) {
    process.stdout.write(
      `migrated ${m.code} balances from the old local issuer ${m.fromIssuer} to ${m.toIssuer} (${m.entries} entries)\n`,
    );
  }
  const lines = [
    'Stellar local network — local simulation (not testnet, not mainnet)',
    `  RPC URL:     ${network.rpcUrl}`,
    `  passphrase:  ${network.networkPassphrase}  (serves stellar:testnet)`,
    `  friendbot:   ${network.baseUrl}/friendbot?addr=G...`,
    `  faucet:      POST ${network.baseUrl}/faucet {"address","asset","amount"}`,
    `  data file:   ${dataFile}`,
    `  ledger:      ${network.latestLedger()}`,
  ];
  if (network.certificatePem) {
    const certFile = path.join(path.dirname(dataFile), 'local-network-cert.pem');
    fs.writeFileSync(certFile, network.certificatePem);
    lines.push(`  TLS cert:    ${certFile}  (export NODE_EXTRA_CA_CERTS=${certFile})`);
  }
  for (const asset of network.assets) {
    const secret = network.issuerSecret(asset.code);
    lines.push(`  asset ${asset.code}:`, `    issuer:      ${asset.issuer}`, `    contract id: ${asset.contractId}`);
    lines.push(
      secret
        ? `    issuer secret (local only): ${secret}`
        : '    issuer secret: none (hosted asset; the faucet pays from the network treasury)',
    );
  }
  console.log(lines.join('\n'));

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping the local network at ledger ${network.latestLedger()}`);
    network.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
