import http from 'node:http';
import https from 'node:https';
import express, { NextFunction, Request, Response } from 'express';
import { toStroops } from './amount';
import { FRIENDBOT_PATH } from './constants';
import { LocalLedger } from './local-ledger';
import { RpcError } from './rpc-error';
import { rpcMethods } from './rpc-methods';
import { TlsMaterial } from './tls-certificate';

/**
 * HTTP front of the local network: JSON-RPC 2.0 at POST /rpc (and POST /, where the real RPC listens), the
 * testnet-style friendbot at GET /friendbot?addr=G..., the local faucet at POST /faucet, and GET / describing
 * the network. Every response that is not JSON-RPC carries `"label": "local simulation"`.
 */

export interface HttpHooks {
  ledger: LocalLedger;
  friendbotStroops: bigint;
  /** Called after anything that changed the ledger outside a ledger close (friendbot, faucet). */
  onChange: () => void;
  describe: () => Record<string, unknown>;
}

interface JsonRpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

const LABEL = 'local simulation';

function rpcError(id: unknown, code: number, message: string) {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message } };
}

function handleOne(hooks: HttpHooks, request: JsonRpcRequest, friendbotUrl: string) {
  const id = request.id ?? null;
  if (request.jsonrpc !== '2.0' || typeof request.method !== 'string')
    return rpcError(id, RpcError.invalidRequest, 'invalid JSON-RPC 2.0 request');
  const method = Object.prototype.hasOwnProperty.call(rpcMethods, request.method)
    ? rpcMethods[request.method]
    : undefined;
  if (!method) return rpcError(id, RpcError.methodNotFound, `method "${request.method}" not found`);
  const params =
    request.params && typeof request.params === 'object' && !Array.isArray(request.params)
      ? (request.params as Record<string, unknown>)
      : {};
  try {
    const result = method(hooks.ledger, params, { friendbotUrl });
    return { jsonrpc: '2.0', id, result };
  } catch (error) {
    if (error instanceof RpcError) return rpcError(id, error.code, error.message);
    return rpcError(id, RpcError.internalError, (error as Error).message);
  }
}

export function createLocalNetworkApp(hooks: HttpHooks): express.Express {
  const app = express();
  const convenience = (res: Response, run: () => Record<string, unknown>): void => {
    try {
      const answer = run();
      hooks.onChange();
      res.json({ label: LABEL, ...answer });
    } catch (error) {
      res.status(400).json({ label: LABEL, error: (error as Error).message });
    }
  };
  app.use(express.json({ limit: '2mb' }));

  const rpc = (req: Request, res: Response): void => {
    const friendbotUrl = `${req.protocol}://${req.get('host') ?? ''}${FRIENDBOT_PATH}`;
    const body = req.body as unknown;
    if (Array.isArray(body)) {
      res.json(body.map((r) => handleOne(hooks, r as JsonRpcRequest, friendbotUrl)));
      return;
    }
    res.json(handleOne(hooks, (body ?? {}) as JsonRpcRequest, friendbotUrl));
  };
  app.post('/rpc', rpc);
  app.post('/', rpc);

  app.get(FRIENDBOT_PATH, (req, res) => {
    const addr = typeof req.query.addr === 'string' ? req.query.addr : '';
    try {
      const hash = hooks.ledger.friendbot(addr, hooks.friendbotStroops);
      hooks.onChange();
      res.json({ label: LABEL, successful: true, hash, ledger: hooks.ledger.latest.sequence });
    } catch (error) {
      res.status(400).json({
        type: 'https://stellar.org/horizon-errors/bad_request',
        title: 'Bad Request',
        status: 400,
        detail: (error as Error).message,
        label: LABEL,
      });
    }
  });

  app.post('/faucet', (req, res) => {
    const { address, asset, amount } = (req.body ?? {}) as { address?: unknown; asset?: unknown; amount?: unknown };
    if (typeof address !== 'string' || typeof asset !== 'string' || typeof amount !== 'string') {
      res
        .status(400)
        .json({ label: LABEL, error: 'expected JSON {"address": "G...", "asset": "USDC", "amount": "10.5"}' });
      return;
    }
    try {
      const hash = hooks.ledger.faucet(address, asset, toStroops(amount), hooks.friendbotStroops);
      hooks.onChange();
      const paid = hooks.ledger.registry.require(asset);
      // The asset as a client configures it: code, issuer and SAC contract id (testnet's, for the hosted USDC).
      res.json({
        label: LABEL,
        hash,
        address,
        asset,
        amount,
        code: paid.code,
        issuer: paid.issuer,
        contractId: paid.contractId,
      });
    } catch (error) {
      res.status(400).json({ label: LABEL, error: (error as Error).message });
    }
  });

  // Local conveniences for tests of the rules the network enforces (not Stellar APIs).
  app.post('/trustline-flags', (req, res) => {
    const { address, asset, authorized } = (req.body ?? {}) as {
      address?: unknown;
      asset?: unknown;
      authorized?: unknown;
    };
    if (typeof address !== 'string' || typeof asset !== 'string' || typeof authorized !== 'boolean') {
      res
        .status(400)
        .json({ label: LABEL, error: 'expected JSON {"address": "G...", "asset": "USDC", "authorized": false}' });
      return;
    }
    convenience(res, () => ({
      address,
      asset,
      authorized,
      hash: hooks.ledger.setTrustlineAuthorized(address, asset, authorized) ?? null,
    }));
  });

  app.post('/contract-account', (req, res) => {
    const { publicKey } = (req.body ?? {}) as { publicKey?: unknown };
    if (typeof publicKey !== 'string') {
      res.status(400).json({ label: LABEL, error: 'expected JSON {"publicKey": "G..."}' });
      return;
    }
    convenience(res, () => ({
      publicKey,
      contractId: hooks.ledger.deployContractAccount(publicKey),
      signature: 'bytes(64): ed25519 signature of the 32-byte Soroban authorization payload',
    }));
  });

  app.post('/surge', (req, res) => {
    const { minInclusionFee } = (req.body ?? {}) as { minInclusionFee?: unknown };
    if (typeof minInclusionFee !== 'string' || !/^\d{1,12}$/.test(minInclusionFee)) {
      res.status(400).json({
        label: LABEL,
        error: 'expected JSON {"minInclusionFee": "500"} (stroops per operation, at least 100)',
      });
      return;
    }
    convenience(res, () => {
      hooks.ledger.setMinimumInclusionFee(BigInt(minInclusionFee));
      return { minInclusionFee };
    });
  });

  app.post('/fee-profile', (req, res) => {
    const { profile } = (req.body ?? {}) as { profile?: unknown };
    if (profile !== 'pubnet' && profile !== 'local') {
      res.status(400).json({ label: LABEL, error: 'expected JSON {"profile": "pubnet"} or {"profile": "local"}' });
      return;
    }
    convenience(res, () => {
      hooks.ledger.setFeeProfile(profile);
      return { profile };
    });
  });

  app.get('/', (_req, res) => {
    res.json({ label: LABEL, ...hooks.describe() });
  });

  app.use((error: Error & { type?: string }, _req: Request, res: Response, _next: NextFunction) => {
    if (error.type === 'entity.parse.failed') {
      res.status(200).json(rpcError(null, RpcError.parseError, 'parse error: invalid JSON'));
      return;
    }
    res.status(500).json(rpcError(null, RpcError.internalError, error.message));
  });
  return app;
}

/** Listens on host:port, over HTTPS when `tls` is given. */
export function listen(app: express.Express, host: string, port: number, tls?: TlsMaterial): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    const server = tls ? https.createServer({ key: tls.keyPem, cert: tls.certPem }, app) : http.createServer(app);
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
