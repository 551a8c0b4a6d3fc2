import { toStroops } from '../amount';
import type { ProbeTarget } from './types';

/** What a probe fetch returns (the SSRF-safe fetcher, reading 402 bodies). Throws on transport failures. */
export type ProbeFetch = (url: string) => Promise<{ status: number; body: string; headers?: Record<string, string> }>;

/** The URL a probe requests: route parameters of the cataloged URL template filled with a fixed sample value. */
export function probeUrl(templateUrl: string): string {
  return templateUrl.replace(/\{[^}/]{1,64}\}/g, 'conformance-probe');
}

export interface Accept {
  scheme?: unknown;
  network?: unknown;
  amount?: unknown;
  maxAmountRequired?: unknown;
  asset?: unknown;
  payTo?: unknown;
  extra?: { asset?: { code?: unknown; issuer?: unknown }; amount?: unknown };
}

export function parseAccepts(res: { body: string; headers?: Record<string, string> }): Accept[] | null {
  const candidates: string[] = [];
  const header = res.headers?.['payment-required'];
  if (header) {
    try {
      candidates.push(Buffer.from(header, 'base64').toString('utf8'));
    } catch {
      // ignore: the body may still hold the requirements
    }
  }
  candidates.push(res.body);
  for (const text of candidates) {
    try {
      const parsed = JSON.parse(text) as { accepts?: unknown };
      if (Array.isArray(parsed.accepts)) return parsed.accepts as Accept[];
    } catch {
      // next candidate
    }
  }
  return null;
}

function sameAmount(a: Accept, amount: string): boolean {
  const want = toStroops(amount).toString();
  for (const v of [a.amount, a.maxAmountRequired]) if (typeof v === 'string' && v === want) return true;
  if (typeof a.extra?.amount === 'string') {
    try {
      return toStroops(a.extra.amount) === toStroops(amount);
    } catch {
      return false;
    }
  }
  return false;
}

/**
 * An unpaid request must answer 402 with requirements that match the catalog entry: scheme `exact`, the network,
 * the amount, the asset (contract id, or code + issuer) and payTo. Answers a reason code when it does not.
 */
export async function probe402(
  fetch: ProbeFetch,
  target: ProbeTarget,
  assetContractId: string | null,
): Promise<{ passed: boolean; reason: string | null }> {
  let res: Awaited<ReturnType<ProbeFetch>>;
  try {
    res = await fetch(probeUrl(target.url));
  } catch (err) {
    return { passed: false, reason: `UNREACHABLE: ${(err as Error).message}`.slice(0, 300) };
  }
  if (res.status !== 402)
    return { passed: false, reason: `NOT_402: the endpoint answered ${res.status} to an unpaid request` };
  const accepts = parseAccepts(res);
  if (!accepts || accepts.length === 0)
    return { passed: false, reason: 'NO_REQUIREMENTS: the 402 answer carries no x402 accepts list' };
  const forNetwork = accepts.filter((a) => a.scheme === 'exact' && a.network === target.network);
  if (forNetwork.length === 0)
    return { passed: false, reason: `NETWORK_MISMATCH: no exact requirement for ${target.network}` };
  const mismatches = new Set<string>();
  for (const a of forNetwork) {
    const assetOk =
      (assetContractId !== null && a.asset === assetContractId) ||
      (a.extra?.asset?.code === target.assetCode && a.extra?.asset?.issuer === target.assetIssuer);
    const amountOk = sameAmount(a, target.amount);
    const payToOk = a.payTo === target.payTo;
    if (assetOk && amountOk && payToOk) return { passed: true, reason: null };
    if (!amountOk) mismatches.add('AMOUNT_MISMATCH');
    if (!assetOk) mismatches.add('ASSET_MISMATCH');
    if (!payToOk) mismatches.add('RECIPIENT_MISMATCH');
  }
  return { passed: false, reason: `${[...mismatches].join(', ')}: the 402 requirements differ from the catalog entry` };
}
