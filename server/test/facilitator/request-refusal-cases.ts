/**
 * The requests of request-refusal-texts.test.ts, and their answers as recorded from express-openapi-validator's own
 * chain (request-refusal-answers.json, recorded at d1928c4 before the verify/settle fast path existed).
 */
import fs from 'node:fs';
import path from 'node:path';

export interface RefusalCase {
  name: string;
  path: string;
  method?: 'post' | 'get' | 'put';
  headers?: Record<string, string>;
  /** A JSON body (supertest sends it as application/json unless headers say otherwise). */
  body?: unknown;
  /** A raw string body (with the content type in headers). */
  raw?: string;
  expected: unknown;
}

const ISSUER = 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5';
const PAY_TO = 'GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3';
const payload = () => ({
  x402Version: 2,
  scheme: 'exact',
  network: 'stellar:testnet',
  asset: { code: 'USDC', issuer: ISSUER },
  amount: '0.0100000',
  payTo: PAY_TO,
  expiresAtLedger: 1234620,
  authorization: { format: 'sorobanAuthorizationEntry', xdr: 'AAAAAQ==' },
});
const requirements = () => ({
  scheme: 'exact',
  network: 'stellar:testnet',
  amount: '0.0100000',
  payTo: PAY_TO,
  asset: { code: 'USDC', issuer: ISSUER },
  maxTimeoutSeconds: 300,
});
const verifyBody = (change: (b: Record<string, any>) => void = () => {}) => {
  const b: Record<string, any> = { paymentPayload: payload(), paymentRequirements: requirements() };
  change(b);
  return b;
};
const settleBody = (change: (b: Record<string, any>) => void = () => {}) => {
  const b: Record<string, any> = {
    paymentAttemptId: 'pay_01JD7A1B2C3D4E5F6G7H8J9K0M',
    paymentPayload: payload(),
    resourceId: 'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T',
  };
  change(b);
  return b;
};
const x402Requirements = () => ({
  scheme: 'exact',
  network: 'stellar:testnet',
  asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  amount: '1250000',
  payTo: PAY_TO,
  maxTimeoutSeconds: 300,
  extra: { areFeesSponsored: true },
});
const x402Body = (change: (b: Record<string, any>) => void = () => {}) => {
  const b: Record<string, any> = {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      resource: { url: 'https://weather.example.com/v1/forecast/Lisbon' },
      accepted: x402Requirements(),
      payload: { transaction: 'AAAAAQ==' },
    },
    paymentRequirements: x402Requirements(),
  };
  change(b);
  return b;
};
const manyUnknown = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`extra${i}`, i]));

type Input = Omit<RefusalCase, 'expected'>;

/** Every kind of refusal, on each route where it applies. */
function inputsFor(route: string, body: typeof verifyBody, face: 'v1' | 'x402'): Input[] {
  const json = { 'content-type': 'application/json' };
  const cases: Input[] = [
    { name: 'no body, no content type', path: route },
    { name: 'an empty JSON body', path: route, headers: json, raw: '' },
    { name: 'text/plain', path: route, headers: { 'content-type': 'text/plain' }, raw: JSON.stringify(body()) },
    {
      name: 'a form body',
      path: route,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      raw: 'paymentPayload=1',
    },
    { name: 'malformed JSON', path: route, headers: json, raw: '{"paymentPayload": ' },
    { name: 'a JSON array', path: route, body: [1, 2] },
    { name: 'a JSON string', path: route, headers: json, raw: '"verify"' },
    { name: 'JSON null', path: route, headers: json, raw: 'null' },
    { name: 'an empty object', path: route, body: {} },
    { name: 'paymentPayload missing', path: route, body: body((b) => delete b.paymentPayload) },
    { name: 'paymentPayload of the wrong type', path: route, body: body((b) => (b.paymentPayload = 'x')) },
    { name: 'one unknown field', path: route, body: body((b) => (b.surprise = 1)) },
    { name: 'thirty unknown fields', path: route, body: body((b) => Object.assign(b, manyUnknown(30))) },
    {
      name: 'an oversize body',
      path: route,
      body: body((b) => (b.paymentPayload.padding = 'x'.repeat(300 * 1024))),
    },
    {
      name: 'nested too deeply',
      path: route,
      headers: json,
      raw: `{"paymentPayload":${'['.repeat(70)}${']'.repeat(70)}}`,
    },
    {
      name: 'charset latin1',
      path: route,
      headers: { 'content-type': 'application/json; charset=latin1' },
      raw: JSON.stringify(body()),
    },
    {
      name: 'gzip content encoding',
      path: route,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      raw: JSON.stringify(body()),
    },
    { name: 'an unknown query parameter', path: `${route}?debug=1`, body: body() },
    { name: 'an empty query string', path: `${route}?`, body: body() },
    { name: 'GET', path: route, method: 'get' },
    { name: 'PUT', path: route, method: 'put', body: body() },
    { name: 'upper-case path', path: route.toUpperCase(), body: body() },
    { name: 'trailing slash', path: `${route}/`, body: body() },
    {
      name: 'application/json with charset utf-8',
      path: route,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      raw: JSON.stringify(body((b) => (b.surprise = 1))),
    },
    {
      name: 'application/vnd.api+json',
      path: route,
      headers: { 'content-type': 'application/vnd.api+json' },
      raw: JSON.stringify(body()),
    },
  ];
  if (face === 'v1') {
    cases.push(
      { name: 'bad const (scheme upto)', path: route, body: body((b) => (b.paymentPayload.scheme = 'upto')) },
      { name: 'bad pattern (amount with a comma)', path: route, body: body((b) => (b.paymentPayload.amount = '0,5')) },
      { name: 'bad network pattern', path: route, body: body((b) => (b.paymentPayload.network = 'Stellar')) },
      {
        name: 'bad authorization format enum',
        path: route,
        body: body((b) => (b.paymentPayload.authorization.format = 'transaction')),
      },
      { name: 'expiresAtLedger a string', path: route, body: body((b) => (b.paymentPayload.expiresAtLedger = 'soon')) },
      {
        name: 'expiresAtLedger a numeric string (coerced)',
        path: route,
        body: body((b) => (b.paymentPayload.expiresAtLedger = '1234620')),
      },
      { name: 'expiresAtLedger zero', path: route, body: body((b) => (b.paymentPayload.expiresAtLedger = 0)) },
      {
        name: 'several problems at once',
        path: route,
        body: body((b) => {
          b.paymentPayload.amount = -1;
          b.paymentPayload.payTo = 'nobody';
          delete b.paymentPayload.asset;
          b.paymentPayload.extra = true;
        }),
      },
      {
        name: 'unknown field in the asset',
        path: route,
        body: body((b) => (b.paymentPayload.asset.kind = 'credit')),
      },
      { name: 'Idempotency-Key empty', path: route, headers: { 'Idempotency-Key': '' }, body: body() },
      { name: 'Idempotency-Key too long', path: route, headers: { 'Idempotency-Key': 'k'.repeat(300) }, body: body() },
      { name: 'schema-valid, judged by the domain', path: route, body: body() },
      {
        name: 'schema-valid with an Idempotency-Key, judged by the domain',
        path: route,
        headers: { 'Idempotency-Key': `refusal-texts${route}` },
        body: body(),
      },
    );
  } else {
    cases.push(
      { name: 'x402Version 3', path: route, body: body((b) => (b.x402Version = 3)) },
      { name: 'x402Version a numeric string (coerced)', path: route, body: body((b) => (b.x402Version = '2')) },
      {
        name: 'atomic amount with a dot',
        path: route,
        body: body((b) => (b.paymentRequirements.amount = '1.5')),
      },
      { name: 'accepted missing', path: route, body: body((b) => delete b.paymentPayload.accepted) },
      {
        name: 'payload with too many properties',
        path: route,
        body: body((b) => Object.assign(b.paymentPayload.payload, manyUnknown(20))),
      },
      { name: 'schema-valid, judged by the domain', path: route, body: body() },
    );
  }
  return cases.map((c) => ({ ...c, name: `${route}: ${c.name}` }));
}

const ANSWERS_FILE = path.join(__dirname, 'request-refusal-answers.json');

export const REFUSAL_INPUTS: Input[] = [
  ...inputsFor('/v1/verify', verifyBody, 'v1'),
  ...inputsFor('/v1/settle', settleBody, 'v1'),
  ...inputsFor('/x402/verify', x402Body, 'x402'),
  ...inputsFor('/x402/settle', x402Body, 'x402'),
];

const recorded: Record<string, unknown> = fs.existsSync(ANSWERS_FILE)
  ? (JSON.parse(fs.readFileSync(ANSWERS_FILE, 'utf8')) as Record<string, unknown>)
  : {};

export const REFUSAL_CASES: RefusalCase[] = REFUSAL_INPUTS.map((c) => ({ ...c, expected: recorded[c.name] ?? null }));
export { ANSWERS_FILE };
