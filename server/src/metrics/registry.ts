import client from 'prom-client';
import { defineDiscoveryMetrics, type DiscoveryMetrics } from './discovery';
import { defineFacilitatorMetrics, type FacilitatorMetrics } from './facilitator';
import { defineOperationsMetrics, type OperationsMetrics } from './operations';
import { defineMcpMetrics, type McpMetrics } from './mcp';
import { defineAbuseMetrics, type AbuseMetrics } from './abuse';

/**
 * The one metrics registry. Every metric of the service is defined here or in the area files beside it
 * (discovery.ts, facilitator.ts), all on this registry; other code receives the metric objects. Every series carries
 * the `environment` label (a default label), and every ledger-related series also
 * carries `network`, so testnet and mainnet figures never mix.
 */
export interface Metrics {
  registry: client.Registry;
  httpRequests: client.Counter<'method' | 'route' | 'status'>;
  httpErrors: client.Counter<'route' | 'code'>;
  httpLatency: client.Histogram<'method' | 'route' | 'status'>;
  rateLimited: client.Counter<'route'>;
  authFailures: client.Counter<'reason'>;
  uptime: client.Gauge;
  jobs: JobMetrics;
  discovery: DiscoveryMetrics;
  facilitator: FacilitatorMetrics;
  operations: OperationsMetrics;
  mcp: McpMetrics;
  abuse: AbuseMetrics;
}

/** The eight tracked figures of every background worker, labelled by worker name. */
export interface JobMetrics {
  queueDepth: client.Gauge<'worker'>;
  active: client.Gauge<'worker'>;
  completed: client.Counter<'worker'>;
  failed: client.Counter<'worker'>;
  retries: client.Counter<'worker'>;
  deadLetters: client.Counter<'worker'>;
  latency: client.Histogram<'worker'>;
  lastSuccess: client.Gauge<'worker'>;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(environment: string): Metrics {
  const registry = new client.Registry();
  registry.setDefaultLabels({ environment });
  client.collectDefaultMetrics({ register: registry });
  const startedAt = Date.now();
  return {
    registry,
    httpRequests: new client.Counter({
      name: 'api_requests_total',
      help: 'API requests by method, route template and status code',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpErrors: new client.Counter({
      name: 'api_errors_total',
      help: 'API error responses by route template and error code',
      labelNames: ['route', 'code'],
      registers: [registry],
    }),
    httpLatency: new client.Histogram({
      name: 'api_request_duration_seconds',
      help: 'API latency by route template (p50/p95/p99 via histogram_quantile)',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    rateLimited: new client.Counter({
      name: 'api_rate_limited_total',
      help: 'Requests refused with RATE_LIMITED',
      labelNames: ['route'],
      registers: [registry],
    }),
    authFailures: new client.Counter({
      name: 'api_auth_failures_total',
      help: 'Authentication (401) and authorization (403) failures by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    uptime: new client.Gauge({
      name: 'service_uptime_seconds',
      help: 'Seconds since this server process started',
      registers: [registry],
      collect() {
        this.set((Date.now() - startedAt) / 1000);
      },
    }),
    jobs: {
      queueDepth: new client.Gauge({
        name: 'job_queue_depth',
        help: 'Jobs waiting to run, by worker',
        labelNames: ['worker'],
        registers: [registry],
      }),
      active: new client.Gauge({
        name: 'job_active',
        help: 'Jobs running now in this process, by worker',
        labelNames: ['worker'],
        registers: [registry],
      }),
      completed: new client.Counter({
        name: 'job_completed_total',
        help: 'Jobs that completed successfully',
        labelNames: ['worker'],
        registers: [registry],
      }),
      failed: new client.Counter({
        name: 'job_failed_total',
        help: 'Job runs that failed (each failed try counts)',
        labelNames: ['worker'],
        registers: [registry],
      }),
      retries: new client.Counter({
        name: 'job_retries_total',
        help: 'Retries scheduled after a failed try',
        labelNames: ['worker'],
        registers: [registry],
      }),
      deadLetters: new client.Counter({
        name: 'job_dead_letter_total',
        help: 'Jobs dead-lettered after their last try',
        labelNames: ['worker'],
        registers: [registry],
      }),
      latency: new client.Histogram({
        name: 'job_processing_duration_seconds',
        help: 'Processing latency of one job run',
        labelNames: ['worker'],
        buckets: LATENCY_BUCKETS,
        registers: [registry],
      }),
      lastSuccess: new client.Gauge({
        name: 'job_last_success_timestamp_seconds',
        help: 'Unix time of the last successful run',
        labelNames: ['worker'],
        registers: [registry],
      }),
    },
    discovery: defineDiscoveryMetrics(registry),
    facilitator: defineFacilitatorMetrics(registry),
    operations: defineOperationsMetrics(registry),
    mcp: defineMcpMetrics(registry),
    abuse: defineAbuseMetrics(registry),
  };
}
