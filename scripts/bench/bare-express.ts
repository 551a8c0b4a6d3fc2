/**
 * A baseline of bench:verify and bench:refusal: the thinnest Express 5 endpoint, `POST /v1/verify` parsing the JSON
 * body (express.json) and answering 200 `{"ok":true}`, in its own process. It measures what HTTP + Express + JSON
 * parsing alone cost on this machine, so the service's refusal of an invalid signature (bench:verify) or of a hostile
 * body (bench:refusal) can be compared with it. BARE_EXPRESS_LIMIT: the body limit (default 64kb; bench:refusal gives
 * the service's BODY_LIMIT_BYTES). BARE_EXPRESS_FIXED_ANSWER=1: answer `{"ok":true}` without reading the body (no
 * walk over its keys that the baseline would be charged for).
 */
import express from 'express';

const fixed = process.env.BARE_EXPRESS_FIXED_ANSWER === '1';
const app = express();
app.use(express.json({ limit: process.env.BARE_EXPRESS_LIMIT || '64kb' }));
app.post('/v1/verify', (req, res) => {
  res.status(200).json(fixed ? { ok: true } : { ok: true, fields: Object.keys(req.body ?? {}).length });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`bare express listening on http://127.0.0.1:${(server.address() as { port: number }).port}`);
});
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => (server.closeAllConnections(), server.close(() => process.exit(0))));
