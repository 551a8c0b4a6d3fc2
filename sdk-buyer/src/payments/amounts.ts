/** Decimal asset amounts <-> i128 stroops (7 fraction digits), exactly, without floats. */
export function toStroops(amount: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,7}))?$/.exec(amount.trim());
  if (!m) throw new Error(`Not a decimal amount with at most 7 fraction digits: ${amount}`);
  return BigInt(m[1]) * 10_000_000n + BigInt((m[2] ?? '').padEnd(7, '0'));
}

export function fromStroops(stroops: bigint | string): string {
  const v = BigInt(stroops);
  const whole = v / 10_000_000n;
  const frac = (v % 10_000_000n).toString().padStart(7, '0');
  return `${whole}.${frac}`;
}
