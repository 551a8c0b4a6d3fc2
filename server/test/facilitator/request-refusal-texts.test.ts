/**
 * The exact answers of every kind of request-validation refusal on the verify and settle routes (/v1/verify,
 * /v1/settle, /x402/verify, /x402/settle): status, code, message, details and the headers a client reads. These
 * routes take a fast path past express-openapi-validator's per-request chain (http/payment-route-validation.ts);
 * these answers were recorded from the library's own chain before the fast path existed, so any change of text fails.
 */
import fs from 'node:fs';
import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { ANSWERS_FILE, REFUSAL_CASES, type RefusalCase } from './request-refusal-cases';

/** RECORD_REFUSAL_ANSWERS=1 writes the answers of the code under test to the answers file instead of comparing. */
const RECORD = process.env.RECORD_REFUSAL_ANSWERS === '1';

describe('request-validation refusals on the verify and settle routes', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  async function send(c: RefusalCase) {
    let req = request(svc.app)[c.method ?? 'post'](c.path);
    for (const [k, v] of Object.entries(c.headers ?? {})) req = req.set(k, v);
    if (c.raw !== undefined) req = req.send(c.raw);
    else if (c.body !== undefined) req = req.send(c.body as object);
    return req;
  }

  const answerOf = (res: request.Response) => {
    const body = res.body as { error?: { requestId?: unknown } };
    if (body?.error && typeof body.error.requestId === 'string') body.error.requestId = '<id>';
    return {
      status: res.status,
      contentType: res.headers['content-type'],
      allow: res.headers.allow,
      body,
    };
  };

  if (RECORD) {
    it('records the answers', async () => {
      const answers: Record<string, unknown> = {};
      for (const c of REFUSAL_CASES) answers[c.name] = answerOf(await send(c));
      fs.writeFileSync(ANSWERS_FILE, `${JSON.stringify(answers, null, 2)}\n`);
    });
    return;
  }

  it('has a recorded answer for every case', () => {
    expect(REFUSAL_CASES.filter((c) => c.expected === null).map((c) => c.name)).toEqual([]);
  });

  it.each(REFUSAL_CASES.map((c) => [c.name, c] as const))('%s: the same answer as recorded', async (_name, c) => {
    // twice: the first request of a route and content type goes through the library's whole chain, the second
    // takes the fast path where it applies
    for (let round = 0; round < 2; round += 1) expect(answerOf(await send(c))).toEqual(c.expected);
  });
});
