import { randomBytes } from 'node:crypto';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

/**
 * A self-signed ECDSA P-256 certificate for serving the RPC over HTTPS, made by `selfsigned`. Needed because some
 * stock clients (the @x402/stellar exact client builds its AssembledTransaction without `allowHttp`) refuse
 * plain-HTTP RPC URLs.
 */

export interface TlsMaterial {
  keyPem: string;
  certPem: string;
}

/** Creates a key and a self-signed certificate (CA:TRUE, so clients can trust it directly) for `hosts`. */
export async function createSelfSignedCertificate(hosts: string[], days = 365): Promise<TlsMaterial> {
  const names = [...new Set(['localhost', '127.0.0.1', ...hosts.filter((h) => !net.isIPv6(h))])];
  // A unique subject per certificate: several trusted self-signed certificates with one subject name make the
  // verifier pick the wrong one by issuer name ("self-signed certificate") when one process trusts two of them.
  const commonName = `Stellar local network (local simulation) ${randomBytes(8).toString('hex')}`;
  const now = Date.now();
  // Loaded here, not at the top: only a network served over TLS needs it, and its X.509 stack is the heaviest module
  // the local network would load (~0.05 s of CPU for every process or test file that starts one).
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + days * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      {
        name: 'subjectAltName',
        altNames: names.map((h) => (net.isIPv4(h) ? { type: 7 as const, ip: h } : { type: 2 as const, value: h })),
      },
    ],
  });
  return { keyPem: pems.private, certPem: pems.cert };
}

/**
 * Makes this process's default HTTPS agent (used by the SDK's HTTP client) trust `certPem` in addition to the
 * usual roots. For other processes, point NODE_EXTRA_CA_CERTS at the certificate file instead.
 */
export function trustCertificate(certPem: string): void {
  const current = https.globalAgent.options.ca;
  const list = current === undefined ? [...tls.rootCertificates] : Array.isArray(current) ? [...current] : [current];
  if (!list.some((c) => c.toString() === certPem)) list.push(certPem);
  https.globalAgent.options.ca = list;
}
