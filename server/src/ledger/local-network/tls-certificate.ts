import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

/**
 * A self-signed ECDSA P-256 certificate for serving the RPC over HTTPS, built as DER by hand (Node has no
 * certificate writer). Needed because some stock clients (the @x402/stellar exact client builds its
 * AssembledTransaction without `allowHttp`) refuse plain-HTTP RPC URLs.
 */

export interface TlsMaterial {
  keyPem: string;
  certPem: string;
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n >>= 8) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const der = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
};
const sequence = (...items: Buffer[]): Buffer => der(0x30, ...items);
const set = (...items: Buffer[]): Buffer => der(0x31, ...items);
const octets = (content: Buffer): Buffer => der(0x04, content);
const bool = (value: boolean): Buffer => der(0x01, Buffer.from([value ? 0xff : 0]));
const utf8 = (text: string): Buffer => der(0x0c, Buffer.from(text, 'utf8'));
const bitString = (content: Buffer): Buffer => der(0x03, Buffer.from([0]), content);

function integer(bytes: Buffer): Buffer {
  return der(0x02, bytes[0] & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const part of rest) {
    const chunk: number[] = [];
    for (let n = part; ; n = Math.floor(n / 128)) {
      chunk.unshift((n % 128) | (chunk.length ? 0x80 : 0));
      if (n < 128) break;
    }
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const iso = date.toISOString();
  const text = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return der(0x17, Buffer.from(text, 'ascii'));
}

function subjectAltNames(hosts: string[]): Buffer {
  const names = [...new Set(['localhost', '127.0.0.1', ...hosts])].map((host) =>
    net.isIPv4(host) ? der(0x87, Buffer.from(host.split('.').map(Number))) : der(0x82, Buffer.from(host, 'ascii')),
  );
  return sequence(...names);
}

/** Creates a key and a self-signed certificate (CA:TRUE, so clients can trust it directly) for `hosts`. */
export function createSelfSignedCertificate(hosts: string[], days = 365): TlsMaterial {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const ecdsaWithSha256 = sequence(oid('1.2.840.10045.4.3.2'));
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  // A unique subject per certificate: several trusted self-signed certificates with one subject name make the
  // verifier pick the wrong one by issuer name ("self-signed certificate") when one process trusts two of them.
  const name = sequence(set(sequence(oid('2.5.4.3'), utf8(`Stellar local network (local simulation) ${serial.toString('hex').slice(0, 16)}`))));
  const now = Date.now();
  const extensions = sequence(
    sequence(oid('2.5.29.17'), octets(subjectAltNames(hosts.filter((h) => !net.isIPv6(h))))),
    sequence(oid('2.5.29.19'), bool(true), octets(sequence(bool(true)))),
  );
  const tbs = sequence(
    der(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaWithSha256,
    name,
    sequence(utcTime(new Date(now - 60_000)), utcTime(new Date(now + days * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, extensions),
  );
  const certificate = sequence(tbs, ecdsaWithSha256, bitString(sign('sha256', tbs, privateKey)));
  const body = certificate.toString('base64').replace(/(.{64})/g, '$1\n');
  return {
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certPem: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
  };
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
