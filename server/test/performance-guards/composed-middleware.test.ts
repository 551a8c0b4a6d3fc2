/**
 * The app's root middlewares run composed into a few Express layers (src/http/compose.ts). A composition must behave
 * exactly as the same handlers mounted one layer each: same order, errors to the error handlers (from next(err), a
 * throw, a rejected promise), next('route') going on, next('router') leaving the app. Real Express 5, real HTTP.
 */
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import request from 'supertest';
import { composeMiddleware } from '../../src/http/compose';

type Outcome = 'next' | 'error' | 'throw' | 'reject' | 'rejectEmpty' | 'route' | 'router' | 'asyncNext' | 'answer';

/** Three handlers, each doing what the request's query says for its position, recording that it ran. */
function handlers(): RequestHandler[] {
  return [0, 1, 2].map((i) => (req, res, next) => {
    (res.locals.trail ??= []).push(i);
    const what = String(req.query[`h${i}`] ?? 'next') as Outcome;
    switch (what) {
      case 'error':
        return next(new Error(`error from ${i}`));
      case 'throw':
        throw new Error(`thrown by ${i}`);
      case 'reject':
        return Promise.reject(new Error(`rejected by ${i}`));
      case 'rejectEmpty':
        return Promise.reject(undefined);
      case 'route':
        return next('route');
      case 'router':
        return next('router');
      case 'asyncNext':
        return Promise.resolve().then(() => next());
      case 'answer':
        res.json({ answeredBy: i, trail: res.locals.trail });
        return;
      default:
        return next();
    }
  });
}

function app(composed: boolean) {
  const a = express();
  if (composed) a.use(composeMiddleware(...handlers()));
  else for (const h of handlers()) a.use(h);
  a.use((_req, res) => res.json({ reachedEnd: true, trail: res.locals.trail }));
  const onError: ErrorRequestHandler = (err, _req, res, _next) =>
    res.status(500).json({ error: (err as Error).message, trail: res.locals.trail });
  a.use(onError);
  return a;
}

const CASES = [
  '',
  'h1=answer',
  'h0=error',
  'h1=throw',
  'h2=reject',
  'h1=rejectEmpty',
  'h0=route',
  'h1=asyncNext&h2=answer',
  'h0=asyncNext&h1=throw',
  'h1=router',
];

describe('composed middleware', () => {
  it.each(CASES)('answers as the same handlers on separate layers (query %p)', async (query) => {
    const separate = await request(app(false)).get(`/x?${query}`);
    const composed = await request(app(true)).get(`/x?${query}`);
    expect({ status: composed.status, body: composed.body }).toEqual({
      status: separate.status,
      body: separate.body,
    });
  });

  it('refuses an error handler (four arguments) in a composition', () => {
    const onError: ErrorRequestHandler = (_e, _q, _s, next) => next();
    expect(() => composeMiddleware(handlers()[0], onError as unknown as RequestHandler)).toThrow(/request handlers/);
  });
});
