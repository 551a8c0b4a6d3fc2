import express, { type Express, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Sequelize } from 'sequelize';
import { DEFAULT_POOL_MAX } from './data/database';
import type { Handlers } from './http/operation-types';
import type { SellerRepository } from './domain/sellers/types';
import type { Metrics } from './metrics/registry';
import type { Logger } from './logger';
import { requestId } from './http/request-id';
import { requestMetrics } from './http/request-metrics';
import { requestLog } from './http/request-log';
import { resolveCredentials, rejectBadCredentials, type ApiKeyCache, type OperatorKeys } from './http/authenticate';
import { createRouteLabeler } from './http/route-label';
import { createOperationMatcher, type SpecPaths } from './http/operation-matcher';
import { enforceAccessPolicy } from './http/access-policy';
import { admission } from './http/admission';
import { verifyJsonDepth } from './http/json-depth';
import { createRateLimiter, challengeRateLimit, type ChallengeLimit } from './http/rate-limit';
import { mountOperations } from './http/mount-operations';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { docsRouter } from './http/docs';
import { dashboardRouter } from './http/dashboard';
import { homePage } from './http/home';
import { idempotency } from './http/idempotency';
import { createIdempotencyRepository } from './data/idempotency-repository';
import { memoizeValidatorRouteCompilation } from './http/openapi-route-cache';
import { responseValidation } from './http/response-validation';
import { guardValidationWork, unknownFieldsBeyondGuard } from './http/validation-bounds';
import { serverTimingStart, timedStage } from './http/server-timing';
import { composeMiddleware } from './http/compose';
import { paymentRouteValidation } from './http/payment-route-validation';
import { boundValidatorContentType } from './http/validator-content-type';

export interface AppDeps {
  /** LOCAL_DEV_DOMAINS: the /mcp server's call_paid_resource reaches `*.test` sellers on 127.0.0.1. */
  localDevDomains?: boolean;
  /** The bundled spec (openapi/dist/openapi.json). The validator must get the bundle, never the split files. */
  spec: { paths: Record<string, Record<string, never>> } & Record<string, unknown>;
  handlers: Handlers;
  db: Sequelize;
  sellers: SellerRepository;
  metrics: Metrics;
  logger: Logger;
  operatorApiKey: string | null;
  /** The operator keys accepted now (rotation without restart); default [operatorApiKey]. */
  operatorKeys?: OperatorKeys;
  /** The process's API key cache (cleared by key-change notifications); default one of its own. */
  apiKeyCache?: ApiKeyCache;
  rateLimit: { points: number; windowSeconds: number };
  /** Sign-up challenges per hour per client address and per wallet (default DEFAULT_CHALLENGE_LIMIT). */
  challengeLimit?: ChallengeLimit;
  bodyLimitBytes: number;
  /** Connections in the database pool: the admission slots per route class derive from it (http/admission.ts). */
  databasePoolMax?: number;
  /** Admission tuning (tests and measurements): slots reserved for verify/settle, requests that may wait. */
  admission?: { reservedForPayments?: number; maxWaiting?: number };
  /** Validate every response against the spec too (on in tests: a response that breaks the contract is a 500). */
  responseValidation: boolean;
  /** LOG_REQUESTS: one log line per request (request-log.ts). */
  logRequests?: boolean;
  /** SERVER_TIMING: a Server-Timing header per response, stage by stage (server-timing.ts; measurement only). */
  serverTiming?: boolean;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * The request side of the contract, for express-openapi-validator: every operation keeps its parameters and request
 * body, and its responses become one `default` without content. Responses are checked by response-validation.ts
 * (EOV runs with validateResponses: false), yet EOV's schema preprocessor walks every response schema it is given:
 * ~0.2 s of CPU per app, a third of its start-up (measured with --cpu-prof over the server suite).
 */
function requestSideOf(spec: AppDeps['spec']): AppDeps['spec'] {
  const copy = structuredClone(spec);
  for (const item of Object.values(copy.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (HTTP_METHODS.has(method))
        (operation as { responses: unknown }).responses = { default: { description: 'see response-validation.ts' } };
    }
  }
  // Bounded refusal work: the validator's work and errors per closed object and array are bounded
  // (validation-bounds.ts).
  guardValidationWork(copy);
  return copy;
}

/**
 * A router whose modules load on its first request: the MCP SDK and the marketplace MCP server (zod schemas) were
 * ~0.18 s of CPU at every start of a process or test file that never speaks MCP. A failed load answers that request
 * with the error handler and is tried again on the next.
 */
function builtOnFirstRequest(build: () => Promise<RequestHandler>): RequestHandler {
  let router: Promise<RequestHandler> | null = null;
  return (req, res, next) => {
    router ??= build().catch((err: unknown) => {
      router = null;
      throw err;
    });
    router.then((handle) => handle(req, res, next), next);
  };
}

/** Builds the Express app (no listen()), so tests create it with their own dependencies. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  memoizeValidatorRouteCompilation();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  const matchOperation = createOperationMatcher(deps.spec.paths as never);
  const routeOf = createRouteLabeler(matchOperation);
  const timing = deps.serverTiming ?? false;
  const stage = (name: string, handler: RequestHandler) => timedStage(timing, name, handler);
  // Root middlewares run as a few composed layers (http/compose.ts: Express pays per layer), in the same order as
  // before; the layers mounted at a path (docs, dashboard, home, MCP) keep their own places between them.
  const limiter = createRateLimiter({ db: deps.db, ...deps.rateLimit, metrics: deps.metrics, routeOf });
  app.use(
    composeMiddleware(
      ...(timing ? [serverTimingStart] : []),
      stage('requestId', requestId),
      stage('metrics', requestMetrics(deps.metrics, routeOf)),
      ...(deps.logRequests ? [requestLog(deps.logger, routeOf)] : []),
      // Rate limiting comes first, on every route (/health, /metrics and /docs too); only the key lookup precedes it.
      stage(
        'credentials',
        resolveCredentials({
          sellers: deps.sellers,
          operatorApiKey: deps.operatorApiKey,
          operatorKeys: deps.operatorKeys,
          cache: deps.apiKeyCache,
        }),
      ),
      stage('rateLimit', limiter.middleware),
      stage('badCredentials', rejectBadCredentials()),
      stage('accessPolicy', enforceAccessPolicy(matchOperation)),
    ),
  );
  app.use('/docs', docsRouter(deps.spec));
  app.use('/dashboard', dashboardRouter());
  app.get('/', homePage());
  app.use(
    composeMiddleware(
      stage(
        'bodyParser',
        express.json({
          limit: deps.bodyLimitBytes,
          type: ['application/json', 'application/*+json'],
          verify: verifyJsonDepth,
        }),
      ),
      // Database work is admitted per route class, so reads and writes never take the connections kept for
      // verify/settle.
      stage(
        'admission',
        admission({
          poolMax: deps.databasePoolMax ?? DEFAULT_POOL_MAX,
          metrics: deps.metrics.abuse,
          ...deps.admission,
        }),
      ),
    ),
  );
  // The marketplace MCP server (Streamable HTTP, JSON-RPC bodies): its own transport rules, before the validator.
  const mcp = {
    handlers: deps.handlers,
    metrics: deps.metrics.mcp,
    charge: limiter.charge,
    localDevDomains: deps.localDevDomains ?? false,
    version: String((deps.spec.info as { version?: unknown } | undefined)?.version ?? ''),
  };
  app.use(
    '/mcp',
    builtOnFirstRequest(() => import('./http/mcp/mount.js').then(({ mcpRouter }) => mcpRouter(mcp))),
  );
  const validator = OpenApiValidator.middleware({
    apiSpec: requestSideOf(deps.spec) as never,
    // The bundle is validated where it is built: `generate` lints it (redocly `struct`: the OpenAPI 3.1 schema, zero
    // errors) and `generate --check` in npm test refuses a stale one. Validating it again on every start cost
    // ~0.2 s of CPU per app (measured with --cpu-prof: OpenAPISchemaValidator).
    validateApiSpec: false,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true, allErrors: true },
    validateResponses: false, // see http/response-validation.ts
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: false,
  });
  // From the validator to the operation, one layer. The verify and settle routes take a route-matched fast path to
  // the library's compiled validation of their route (http/payment-route-validation.ts: the same middleware, the
  // same error texts); the rest takes its whole chain.
  app.use(
    composeMiddleware(
      // the header the validator keys its compiled validators by, reduced to what validation depends on (bounded)
      boundValidatorContentType(deps.spec.paths as SpecPaths),
      stage(
        'validator',
        paymentRouteValidation(composeMiddleware(...(validator as RequestHandler[])), deps.spec.paths),
      ),
      ...(deps.responseValidation ? [responseValidation(deps.spec as never)] : []),
      stage('challengeLimit', challengeRateLimit({ db: deps.db, limit: deps.challengeLimit, metrics: deps.metrics })),
      stage('idempotency', idempotency(createIdempotencyRepository(deps.db))),
      mountOperations(deps.spec as never, deps.handlers),
    ),
  );
  // An error handler (the validator's refusals of huge objects), so a layer of its own, after the composition: an
  // error leaves the composition at once (the request handlers after its source are skipped, as they were on layers
  // of their own), and this handler passes on every error that is not the validator's (status 400 with `errors`).
  app.use(unknownFieldsBeyondGuard(deps.spec));
  app.use(notFoundHandler());
  app.use(errorHandler(deps.logger));
  return app;
}
