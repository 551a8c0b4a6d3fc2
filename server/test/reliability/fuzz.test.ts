// Hostile input fuzzing from the bundled spec. For every operation, fast-check derives requests from its path,
// query and header parameters and its request body schema: valid-ish values, and malformed ones (wrong types, huge
// strings, deep nesting, unicode, missing required fields, extra fields), sent with supertest to the real app on a
// real database with the local network. Every answer must be a success body (response validation is on, so a
// success body that breaks the spec would itself be a 5xx) or the error envelope with a code from the spec's
// ErrorCode enum, and never a 5xx.
//
// Callers: anonymous, the seller's admin key, the seller's payments-scoped key, the operator, and a garbage key;
// bodies also come with an unsupported charset (latin1) or media type (text/plain).
//
// Runs per operation, sized by what they find (an exploration at 300 runs per operation with the default seed,
// counting each distinct answer, status and error code, and the run that first produced it): 110 by default; 40 for
// the ten operations without parameters or a request body (getHealth, getVersion, listNetworks, ...), whose every
// distinct answer had appeared by run 36 (the rest of their input is the same caller, media type and stray query
// and body values as every other operation's). Operations with parameters or a body still found new answers past run
// 100 (searchResources' last at 280), so they keep 110. About 4,100 requests in all. The requests go to one
// listening server for the file (supertest would otherwise open and close a server per request).
//
// Reproduce a failure: FUZZ_SEED=<seed printed in the failure> (and FUZZ_RUNS=<n> to set every operation's runs).
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import fc from 'fast-check';
import request from 'supertest';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { OPERATOR_KEY, startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 110);
/** Runs for an operation without parameters or a request body (see the top of the file). */
const BARE_RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

type Schema = Record<string, any>;
interface Param {
  in: 'path' | 'query' | 'header' | 'cookie';
  name: string;
  required?: boolean;
  schema: Schema;
}
interface Operation {
  method: (typeof METHODS)[number];
  path: string;
  operationId: string;
  parameters: Param[];
  body: Schema | null;
}

const spec = JSON.parse(
  fs.readFileSync(path.resolve(__dirname, '../../../openapi/dist/openapi.json'), 'utf8'),
) as Schema;
const ERROR_CODES = new Set<string>(spec.components.schemas.ErrorCode.enum);

function deref(s: Schema): Schema {
  let out = s;
  for (let i = 0; out && typeof out.$ref === 'string' && i < 20; i++) {
    out = (out.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: Schema, key: string) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  }
  return out;
}

function operations(): Operation[] {
  const out: Operation[] = [];
  for (const [p, rawItem] of Object.entries(spec.paths as Record<string, Schema>)) {
    const item = deref(rawItem);
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x: Schema) => {
        const prm = deref(x);
        return { ...prm, schema: deref(prm.schema ?? {}) } as Param;
      });
      const bodySchema = op.requestBody
        ? deref(deref(op.requestBody).content?.['application/json']?.schema ?? {})
        : null;
      out.push({ method, path: p, operationId: op.operationId, parameters, body: bodySchema });
    }
  }
  return out;
}

// ---- hostile values ----------------------------------------------------------------------------------------------

const unicode = fc.string({ unit: 'grapheme', maxLength: 40 });
const SURROGATES = 0xe000 - 0xd800;
/**
 * fast-check's `binary` string unit (any code point but a lone surrogate), written out: the same values for the same
 * seed, the same shrinking (checked against `fc.string({ unit: 'binary' })` with fc.sample and shrink on five seeds).
 * The built-in one maps every one of its 1.1 million code points into a table when the string arbitrary is built
 * (`canShrinkWithoutContext` of its slices): ~2 s of CPU at each load of this file; this unmapper computes the index.
 */
const binaryUnit = fc.nat({ max: 0x10ffff - SURROGATES }).map(
  (i) => String.fromCodePoint(i < 0xd800 ? i : i + SURROGATES),
  (v) => {
    const cp = typeof v === 'string' ? v.codePointAt(0) : undefined;
    if (cp === undefined || String.fromCodePoint(cp) !== v || (cp >= 0xd800 && cp < 0xe000))
      throw new Error('not one code point');
    return cp < 0xd800 ? cp : cp - SURROGATES;
  },
);
const binaryish = fc.string({ unit: binaryUnit, maxLength: 40 });
const hugeString = fc
  .constantFrom(1_000, 70_000, 300_000)
  .chain((n) => fc.constantFrom('a', 'é', '𝄞', '\u0000', '{', '%').map((c) => c.repeat(n)));
/**
 * Node's HTTP server answers 431 before the app to a request line and headers beyond 16 KB, at any length past it.
 * A path or query value longer than this is cut to it before the request is built: still past the limit (each
 * character encodes to at least one byte, and such a request must still answer 431, checked below), without the
 * client encoding and parsing a URL of up to 3.6 MB per request (the 70,000 and 300,000-character hugeStrings, ×12
 * encoded for '𝄞'), which was about a third of this file's CPU. Bodies and headers get the values uncut.
 */
const URL_VALUE_MAX = 20_000;
function urlValue(v: string): string {
  if (v.length <= URL_VALUE_MAX) return v;
  const cut = v.slice(0, URL_VALUE_MAX);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut; // no lone surrogate: encodeURIComponent throws
}
const urlValues = (r: Record<string, string | string[]>): Record<string, string | string[]> =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Array.isArray(v) ? v.map(urlValue) : urlValue(v)]));
const beyondUrlLimit = (r: Record<string, string | string[]>) =>
  Object.values(r).some((v) => (Array.isArray(v) ? v : [v]).some((x) => x.length > URL_VALUE_MAX));
const deepNesting = fc.integer({ min: 50, max: 3_000 }).chain((depth) =>
  fc.constantFrom('object', 'array').map((kind) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = kind === 'object' ? { a: v } : [v];
    return v;
  }),
);
const weirdNumber = fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.1 + 0.2, -0, 1e-7, 123456789.12345678);
const injection = fc.constantFrom(
  "' OR 1=1 --",
  '"; DROP TABLE sellers; --',
  '../../etc/passwd',
  '%00',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '__proto__',
  'constructor',
  '{city}',
  '/v1/{a}/{a}/{a}',
  'stellar:pubnet',
  'stellar:mainnet',
  '-0.00000001',
  '1e3',
  'NaN',
  'Infinity',
  'GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
);
const anyScalar: fc.Arbitrary<unknown> = fc.oneof(
  unicode,
  binaryish,
  injection,
  weirdNumber,
  fc.boolean(),
  fc.constant(null),
  fc.integer(),
);
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: anyScalar },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: fc.array(anyScalar, { maxLength: 5 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.oneof(unicode, fc.constantFrom('__proto__', 'constructor', 'prototype')), anyScalar, {
      maxKeys: 4,
    }),
  },
);

// ---- valid-ish values from a schema ------------------------------------------------------------------------------

function stringFor(s: Schema): fc.Arbitrary<string> {
  if (s.enum) return fc.constantFrom(...(s.enum as string[]));
  if (s.const !== undefined) return fc.constant(String(s.const));
  if (s.format === 'uri' || s.format === 'url') return fc.webUrl({ withQueryParameters: true });
  if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  if (s.pattern) {
    try {
      return fc.stringMatching(new RegExp(s.pattern as string)).map((v) => v.slice(0, (s.maxLength as number) ?? 512));
    } catch {
      // a pattern fast-check cannot generate from: fall through to plain strings
    }
  }
  return fc.string({ minLength: (s.minLength as number) ?? 0, maxLength: Math.min((s.maxLength as number) ?? 40, 80) });
}

function validish(raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(raw ?? {});
  if (depth > 6) return anyScalar;
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  const branches = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (branches?.length) return fc.oneof(...branches.map((b) => validish(b, depth + 1)));
  if (s.allOf) {
    const merged: Schema = { type: 'object', properties: {}, required: [] };
    for (const part of (s.allOf as Schema[]).map(deref)) {
      Object.assign(merged.properties, part.properties ?? {});
      merged.required.push(...(part.required ?? []));
    }
    return validish(merged, depth + 1);
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'string':
      return stringFor(s);
    case 'integer':
      return fc.integer({ min: (s.minimum as number) ?? -1_000_000, max: (s.maximum as number) ?? 1_000_000_000 });
    case 'number':
      return fc.double({
        min: (s.minimum as number) ?? -1e9,
        max: (s.maximum as number) ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(validish(s.items, depth + 1), {
        minLength: (s.minItems as number) ?? 0,
        maxLength: Math.min((s.maxItems as number) ?? 3, 3),
      });
    case 'object':
    case undefined: {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const names = Object.keys(props);
      if (!names.length) return fc.dictionary(fc.string({ maxLength: 10 }), anyScalar, { maxKeys: 3 });
      const required = new Set<string>((s.required as string[]) ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const n of names) record[n] = validish(props[n], depth + 1);
      return fc.record(record, { requiredKeys: names.filter((n) => required.has(n)) });
    }
    default:
      return anyScalar;
  }
}

/** A valid-ish value, or that value with one hostile change: a field dropped, replaced, or an extra field. */
function bodyFor(s: Schema): fc.Arbitrary<unknown> {
  const base = validish(s);
  const mutated = fc
    .tuple(base, fc.nat(), hostile, fc.constantFrom('drop', 'replace', 'extra', 'replaceNested'))
    .map(([v, i, h, how]) => {
      if (!v || typeof v !== 'object' || Array.isArray(v)) return h;
      const copy: Record<string, unknown> = { ...(v as Record<string, unknown>) };
      const keys = Object.keys(copy);
      const key = keys.length ? keys[i % keys.length] : 'extra';
      if (how === 'drop') delete copy[key];
      else if (how === 'replace') copy[key] = h;
      else if (how === 'extra') copy[`extra_${i % 7}`] = h;
      else if (copy[key] && typeof copy[key] === 'object') copy[key] = { ...(copy[key] as object), [`x${i % 3}`]: h };
      else copy[key] = h;
      return copy;
    });
  return fc.oneof({ weight: 3, arbitrary: base }, { weight: 5, arbitrary: mutated }, { weight: 1, arbitrary: hostile });
}

function paramValue(p: Param, known: string[]): fc.Arbitrary<string | string[]> {
  const valid = validish(p.schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  const real = known.length ? fc.constantFrom(...known) : valid;
  const bad = hostile.map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null')));
  const dup = fc.array(valid, { minLength: 2, maxLength: 3 }); // ?a=1&a=2
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 2, arbitrary: real },
    { weight: 3, arbitrary: bad },
    { weight: 1, arbitrary: dup },
  );
}

interface FuzzRequest {
  pathParams: Record<string, string | string[]>;
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[]>;
  body: unknown;
  sendBody: 'json' | 'none' | 'text' | 'charset' | 'media';
  auth: 'none' | 'seller' | 'sellerPayments' | 'operator' | 'garbage';
}

describe('hostile input fuzzing from the bundled spec', () => {
  let network: LocalNetwork;
  let svc: TestService;
  /** svc.app listening on a loopback port, for the fuzzed requests (supertest reuses it: no server per request). */
  let server: http.Server;
  let seller: SignedUpSeller;
  /** A second key of the seller, scoped to payments (verify, settle, own payment reads). */
  let paymentsKey: string;
  const known: Record<string, string[]> = {};

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 500 });
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      rateLimit: { points: 1_000_000_000, windowSeconds: 60 },
    });
    seller = await signUpSeller(svc.app);
    const key = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/keys`)
      .set(bearer(seller.apiKey))
      .send({ name: 'fuzz payments', scope: 'payments' });
    if (key.status !== 201) throw new Error(`payments key create failed: ${key.status}`);
    paymentsKey = key.body.secret as string;
    // the key id deleteSellerKey is fuzzed with: a key of its own, so the payments key stays valid for later operations
    const revocable = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/keys`)
      .set(bearer(seller.apiKey))
      .send({ name: 'fuzz revocable', scope: 'admin' });
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { assetIssuer: usdc.issuer }));
    if (res.status !== 201) throw new Error(`resource create failed: ${res.status}`);
    const resourceId = (res.body.resource ?? res.body).id as string;
    Object.assign(known, {
      id: [resourceId],
      resourceId: [resourceId],
      sellerId: [seller.id],
      keyId: [revocable.body.id as string],
    });
    server = await new Promise<http.Server>((resolve) => {
      const s = svc.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    process.stdout.write(
      `fuzz seed ${SEED}, ${RUNS} runs per operation, ${BARE_RUNS} for those without parameters or body ` +
        '(FUZZ_SEED / FUZZ_RUNS to change)\n',
    );
  }, 60_000);
  afterAll(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await svc?.stop();
    await network?.stop();
  });

  it('covers every operation of the spec', () => {
    expect(operations().length).toBeGreaterThan(20);
  });

  it.each(operations().map((o) => [o.operationId, o] as const))(
    '%s: every answer is a success body or the enveloped error with a spec code, never 5xx',
    async (_id, op) => {
      const pathParams = op.parameters.filter((p) => p.in === 'path');
      const queryParams = op.parameters.filter((p) => p.in === 'query');
      const headerParams = op.parameters.filter((p) => p.in === 'header');
      const record = (ps: Param[]) => {
        const r: Record<string, fc.Arbitrary<string | string[]>> = {};
        for (const p of ps) r[p.name] = paramValue(p, known[p.name] ?? []);
        return fc.record(r, { requiredKeys: ps.filter((p) => p.in === 'path').map((p) => p.name) });
      };
      const arb: fc.Arbitrary<FuzzRequest> = fc.record({
        pathParams: record(pathParams) as fc.Arbitrary<Record<string, string | string[]>>,
        query: fc
          .tuple(
            record(queryParams),
            fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 2 }),
          )
          .map(([q, extra]) => ({ ...extra, ...q })),
        headers: record(headerParams) as fc.Arbitrary<Record<string, string | string[]>>,
        body: op.body ? bodyFor(op.body) : fc.oneof(fc.constant(undefined), hostile),
        sendBody: fc.constantFrom('json', 'json', 'json', 'json', 'none', 'text', 'charset', 'media'),
        auth: fc.constantFrom('none', 'seller', 'sellerPayments', 'operator', 'garbage'),
      });

      const failures: string[] = [];
      await fc
        .assert(
          fc.asyncProperty(arb, async (r) => {
            const cut = beyondUrlLimit(r.pathParams) || beyondUrlLimit(r.query);
            const pathParams = urlValues(r.pathParams);
            const url = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
              const v = pathParams[name];
              return encodeURIComponent(Array.isArray(v) ? v.join(',') : String(v ?? ''));
            });
            let req = request(server)[op.method](url);
            // Node's HTTP client refuses header values with control characters, as every proxy in front would.
            const headerSafe = (v: string) => v.length < 8_000 && !/[^\t\x20-\x7e\x80-\xff]/.test(v);
            for (const [k, v] of Object.entries(r.headers)) {
              const value = Array.isArray(v) ? v.join(', ') : v;
              if (headerSafe(value)) req = req.set(k, value);
            }
            if (r.auth === 'seller') req = req.set(bearer(seller.apiKey));
            if (r.auth === 'sellerPayments') req = req.set(bearer(paymentsKey));
            if (r.auth === 'operator') req = req.set(bearer(OPERATOR_KEY));
            if (r.auth === 'garbage') req = req.set('Authorization', 'Bearer mk_not_a_real_key_0000000000000000');
            req = req.query(urlValues(r.query));
            let res: request.Response;
            if (r.sendBody === 'none' || r.body === undefined) res = await req;
            else if (r.sendBody === 'text')
              res = await req.set('Content-Type', 'application/json').send(`${JSON.stringify(r.body) ?? ''}}{`);
            else if (r.sendBody === 'charset')
              res = await req
                .set('Content-Type', 'application/json; charset=latin1')
                .send(JSON.stringify(r.body) ?? 'null');
            else if (r.sendBody === 'media')
              res = await req.set('Content-Type', 'text/plain; charset=utf-8').send(JSON.stringify(r.body) ?? 'null');
            else res = await req.set('Content-Type', 'application/json').send(JSON.stringify(r.body) ?? 'null');

            const body = res.body as {
              ok?: unknown;
              error?: { code?: unknown; message?: unknown; requestId?: unknown };
            };
            // Node's own HTTP parser refuses a request line + headers beyond 16 KB with 431 and no body, before the
            // app.
            if (res.status === 431) return true;
            const problem = cut
              ? 'a cut URL value (past the 16 KB limit) that was not answered 431'
              : res.status >= 500
                ? 'a 5xx'
                : res.status >= 400 &&
                    !(
                      body?.ok === false &&
                      typeof body.error?.code === 'string' &&
                      ERROR_CODES.has(body.error.code) &&
                      typeof body.error.message === 'string' &&
                      typeof body.error.requestId === 'string'
                    )
                  ? 'not the error envelope with a spec code'
                  : res.status < 400 &&
                      op.operationId !== 'getMetrics' &&
                      !(op.operationId === 'sendMcpMessage' && res.status === 202) &&
                      (typeof body !== 'object' || body === null)
                    ? 'a success status without a success body'
                    : null;
            if (problem) {
              const shown = JSON.stringify({
                status: res.status,
                body: res.body,
                text: res.body && Object.keys(res.body).length ? undefined : res.text?.slice(0, 300),
              });
              failures.push(`${op.operationId}: ${problem}: ${shown.slice(0, 800)}`);
              return false;
            }
            return true;
          }),
          { seed: SEED, numRuns: op.parameters.length || op.body ? RUNS : BARE_RUNS, endOnFailure: true },
        )
        .catch((err: Error) => {
          throw new Error(
            `${failures.join('\n')}\nseed ${SEED}: ` +
              `${err.message.replace(/(.)\1{40,}/g, (m, c: string) => `${c}×${m.length}`).slice(0, 3_000)}`,
          );
        });
    },
    120_000,
  );
});
