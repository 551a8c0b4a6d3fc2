import { rpc } from '@stellar/stellar-sdk';

export interface DependencyCheck {
  status: 'ok' | 'degraded' | 'down';
  latencyMs?: number;
  message?: string;
}

/** Asks a Soroban RPC server for its health (getHealth), bounded by a timeout. */
export async function checkRpc(rpcUrl: string, timeoutMs = 3000): Promise<DependencyCheck & { latestLedger?: number }> {
  const server = new rpc.Server(rpcUrl, { allowHttp: rpcUrl.startsWith('http:'), timeout: timeoutMs });
  const started = Date.now();
  try {
    const health = await server.getHealth();
    const latencyMs = Date.now() - started;
    return { status: health.status === 'healthy' ? 'ok' : 'degraded', latencyMs, latestLedger: health.latestLedger };
  } catch (err) {
    return { status: 'down', latencyMs: Date.now() - started, message: `RPC unreachable: ${(err as Error).message}`.slice(0, 200) };
  }
}
