/**
 * Amounts are decimal strings with at most 7 fractional digits (Stellar's precision). They are compared and
 * converted exactly, as bigint stroops; a JavaScript number never holds money.
 */
export const AMOUNT_PATTERN = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,7})?$/;
export const STROOPS_PER_UNIT = 10_000_000n;

export function isAmount(value: string): boolean {
  return AMOUNT_PATTERN.test(value);
}

export function toStroops(amount: string): bigint {
  if (!isAmount(amount)) throw new RangeError(`not an amount: ${amount}`);
  const [whole, frac = ''] = amount.split('.');
  return BigInt(whole) * STROOPS_PER_UNIT + BigInt(frac.padEnd(7, '0'));
}

export function fromStroops(stroops: bigint): string {
  const negative = stroops < 0n;
  const abs = negative ? -stroops : stroops;
  const whole = abs / STROOPS_PER_UNIT;
  const frac = (abs % STROOPS_PER_UNIT).toString().padStart(7, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/** Canonical form of a decimal amount (PostgreSQL NUMERIC(20,7) text such as "0.0100000" becomes "0.01"). */
export function normalizeAmount(amount: string): string {
  const [whole, frac = ''] = amount.split('.');
  const trimmed = frac.replace(/0+$/, '');
  return `${BigInt(whole)}${trimmed ? `.${trimmed}` : ''}`;
}
