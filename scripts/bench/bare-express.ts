/**
 * A baseline of bench:verify: the thinnest Express 5 endpoint, `POST /v1/verify` parsing the JSON body
 * (express.json) and answering 200 `{"ok":true}`, in its own process. It measures what HTTP + Express + JSON parsing
 * alone cost on this machine, so the service's refusal of an invalid signature can be compared with it.
 */
import express from 'express';

const app = express();
app.use(express.json({ limit: '64kb' }));
app.post('/v1/verify', (req, res) => {
  res.status(200).json({ ok: true, fields: Object.keys(req.body ?? {}).length });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`bare express listening on http://127.0.0.1:${(server.address() as { port: number }).port}`);
});
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => (server.closeAllConnections(), server.close(() => process.exit(0))));
