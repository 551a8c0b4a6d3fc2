import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { waitFor } from '../discovery/helpers';
import { freePort } from '../support/free-port';

const RULES = path.resolve(__dirname, '../../ops/prometheus/alerts.yml');

let network: LocalNetwork;
let svc: TestService;
let server: Server;
let prometheus: ChildProcess | null = null;
let dir = '';
let promUrl = '';

async function prom<T>(p: string): Promise<T> {
  const res = await fetch(`${promUrl}${p}`);
  return ((await res.json()) as { data: T }).data;
}

beforeAll(async () => {
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 1 },
    runJobs: true,
    jobPollMs: 200,
    operations: { ledgerCloseMs: 200, networkHealthEvery: '1 second', conformanceEvery: '1 day' },
  });
  server = svc.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const apiPort = (server.address() as AddressInfo).port;

  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marketplace-prometheus-'));
  fs.writeFileSync(
    path.join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(RULES)}`,
      'scrape_configs:',
      '  - job_name: marketplace',
      '    metrics_path: /metrics',
      '    authorization:',
      '      type: Bearer',
      `      credentials: ${JSON.stringify(OPERATOR_KEY)}`,
      '    static_configs:',
      `      - targets: ['127.0.0.1:${apiPort}']`,
      '',
    ].join('\n'),
  );
  const promPort = await freePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  prometheus = spawn(
    '/usr/bin/prometheus',
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  prometheus.stderr?.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
  await waitFor(async () => {
    try {
      return (await fetch(`${promUrl}/-/ready`)).ok;
    } catch {
      return false;
    }
  }, 30_000).catch(() => {
    throw new Error(`prometheus did not start: ${log}`);
  });
}, 90_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((r) => prometheus!.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  await new Promise((r) => server.close(r));
  await svc.stop();
  await network.stop().catch(() => undefined);
});

describe('a real Prometheus scraping the service with the alert rules', () => {
  it(
    'scrapes /metrics with the operator key; when the local network stops, MarketplaceRpcUnavailable goes ' +
      'pending for stellar:testnet',
    async () => {
      await waitFor(async () => {
        const targets = await prom<{ activeTargets: Array<{ health: string }> }>('/api/v1/targets');
        return targets.activeTargets.some((t) => t.health === 'up');
      }, 30_000);
      await waitFor(async () => {
        const r = await prom<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
          `/api/v1/query?query=${encodeURIComponent('ledger_rpc_up{network="stellar:testnet"}')}`,
        );
        return r.result.length === 1 && r.result[0].value[1] === '1';
      }, 30_000);
      const before = await prom<{ alerts: Array<{ labels: Record<string, string> }> }>('/api/v1/alerts');
      expect(before.alerts.filter((a) => a.labels.alertname === 'MarketplaceRpcUnavailable')).toEqual([]);

      await network.stop();

      let alert: { labels: Record<string, string>; state: string } | undefined;
      await waitFor(async () => {
        const now = await prom<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('/api/v1/alerts');
        alert = now.alerts.find((a) => a.labels.alertname === 'MarketplaceRpcUnavailable');
        return alert !== undefined;
      }, 30_000);
      expect(alert).toMatchObject({
        state: 'pending',
        labels: {
          alertname: 'MarketplaceRpcUnavailable',
          network: 'stellar:testnet',
          environment: 'test',
          severity: 'critical',
          job: 'marketplace',
        },
      });
    },
    120_000,
  );
});
