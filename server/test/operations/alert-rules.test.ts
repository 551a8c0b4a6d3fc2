import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const OPS = path.resolve(__dirname, '../../ops');
const promtool = (...args: string[]) =>
  execFileSync('promtool', args, {
    cwd: path.join(OPS, 'prometheus'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

describe('Prometheus alert rules and the Grafana dashboard', () => {
  it('promtool accepts the alert rules', () => {
    expect(promtool('check', 'rules', 'alerts.yml')).toMatch(/SUCCESS: 16 rules found/);
  });

  it('every alert fires on its unit-test input and stays silent on healthy input (promtool test rules)', () => {
    expect(promtool('test', 'rules', 'alerts.test.yml')).toMatch(/SUCCESS/);
  });

  it('every recommended alert condition of the contract has a rule, and every rule has a unit test', () => {
    const rules = fs.readFileSync(path.join(OPS, 'prometheus/alerts.yml'), 'utf8');
    const tests = fs.readFileSync(path.join(OPS, 'prometheus/alerts.test.yml'), 'utf8');
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'MarketplaceApiUnavailable',
        'MarketplaceVerifyErrorRateHigh',
        'MarketplaceSettlementFailureRateHigh',
        'MarketplaceRpcUnavailable',
        'MarketplaceHorizonUnavailable',
        'MarketplaceQueueDepthHigh',
        'MarketplaceDeadLetterJobs',
        'MarketplaceSearchIndexStale',
        'MarketplaceCatalogPoisoningSignal',
        'MarketplaceMainnetSettlementDisabled',
        'MarketplaceConformanceRunFailed',
        'MarketplaceContractErrorSpike',
        'MarketplaceTableGrowth',
      ]),
    );
    for (const a of alerts) expect([a, tests.includes(`alertname: ${a}`)]).toEqual([a, true]);
  });

  it('the Grafana dashboard is valid JSON whose panels query metrics the service exports', () => {
    const dash = JSON.parse(fs.readFileSync(path.join(OPS, 'grafana/marketplace-dashboard.json'), 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    expect(dash.panels.length).toBeGreaterThanOrEqual(8);
    const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    for (const metric of [
      'api_requests_total',
      'api_request_duration_seconds_bucket',
      'job_queue_depth',
      'job_dead_letter_total',
      'facilitator_settle_duration_seconds_bucket',
      'ledger_rpc_up',
      'discovery_index_lag_seconds',
      'conformance_last_run_passed',
    ]) {
      expect([metric, exprs.includes(metric)]).toEqual([metric, true]);
    }
  });
});
