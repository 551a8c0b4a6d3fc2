/**
 * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/core/amounts.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/**
 * Decimal asset amounts <-> stroops (i128 atomic units, 7 fraction digits), exactly, without floating point. The
 * one amounts module of the repository: its source is sdk-buyer/src/core/amounts.ts, which scripts/generate.mjs
 * copies into the seller SDK (sdk-seller/src/core/amounts.ts) and the server (server/src/domain/amount.ts).
 *
 * An amount is what the contract's `Amount` schema (openapi/components/schemas/Amount.yaml) allows: digits with no
 * leading zero, an optional dot and 1 to 7 decimals, at most 12 integer digits, e.g. "0.05" or "12.5". Anything
 * else is refused with a RangeError that says why; nothing is ever rounded or cut to 7 decimals.
 */

/** Stellar's precision: 7 decimals. */
export const AMOUNT_DECIMALS = 7;
export const STROOPS_PER_UNIT = 10_000_000n;
/** The contract's `Amount` pattern (at most 12 integer digits, at most 7 decimals). */
export const AMOUNT_PATTERN = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,7})?$/;
/** The largest amount, 999999999999.9999999, in stroops. */
export const MAX_AMOUNT_STROOPS = 10n ** 19n - 1n;

const DECIMAL = /^(-?)([0-9]+)(?:\.([0-9]+))?$/;

/**
 * An amount in stroops that was checked (0 to MAX_AMOUNT_STROOPS): the one form of money inside the server's domain.
 * Made only here, by `toStroops` (from a decimal amount) or `stroops` (from a whole number of stroops); each face
 * (an API's decimal amounts, x402's atomic amounts) converts once at its edge. It is a bigint for arithmetic and
 * comparison; the brand only stops an unchecked bigint from being passed where money is expected.
 */
export type Stroops = bigint & { readonly __brand: 'Stroops' };

export function isAmount(value: unknown): boolean {
  return typeof value === 'string' && AMOUNT_PATTERN.test(value);
}

/** Why `value` is not an amount, or null when it is one. */
export function amountProblem(value: unknown): string | null {
  if (typeof value !== 'string') return `an amount is a decimal string such as "0.05" (got a ${typeof value})`;
  if (isAmount(value)) return null;
  const shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  const m = DECIMAL.exec(value);
  if (!m)
    return (
      `${shown} is not a decimal amount: digits, an optional dot and at most ${AMOUNT_DECIMALS} decimals, such as ` +
      `"0.05"`
    );
  if (m[1]) return `${shown} is negative: an amount is zero or more`;
  if ((m[3] ?? '').length > AMOUNT_DECIMALS)
    return (
      `${shown} has ${m[3].length} decimals: Stellar amounts have at most ${AMOUNT_DECIMALS}, and an amount is ` +
      `never rounded`
    );
  if (m[2].length > 1 && m[2].startsWith('0')) return `${shown} has a leading zero`;
  return `${shown} is out of range: at most 12 integer digits (999999999999.9999999)`;
}

/** "12.5" -> 125000000n. Throws a RangeError saying why when `amount` is not an amount. */
export function toStroops(amount: string): Stroops {
  const problem = amountProblem(amount);
  if (problem !== null) throw new RangeError(problem);
  const [whole, fraction = ''] = amount.split('.');
  return (BigInt(whole) * STROOPS_PER_UNIT + BigInt(fraction.padEnd(AMOUNT_DECIMALS, '0'))) as Stroops;
}

function checkedStroops(stroops: bigint | string): bigint {
  if (typeof stroops === 'string' && !/^-?[0-9]{1,40}$/.test(stroops))
    throw new RangeError(`${JSON.stringify(stroops.slice(0, 40))} is not a whole number of stroops`);
  const v = BigInt(stroops);
  if (v < 0n) throw new RangeError(`${v} stroops is negative: an amount is zero or more`);
  if (v > MAX_AMOUNT_STROOPS)
    throw new RangeError(`${v} stroops is out of range: at most ${MAX_AMOUNT_STROOPS} (999999999999.9999999)`);
  return v;
}

/** A whole number of stroops (a bigint, or its digits) as Stroops. Throws a RangeError when negative or too large. */
export function stroops(value: bigint | string): Stroops {
  return checkedStroops(value) as Stroops;
}

/** 2500000n -> "0.2500000": always 7 decimals, the way Stellar writes amounts. Throws a RangeError when out of range.
 * */
export function fromStroops(stroops: bigint | string): string {
  const v = checkedStroops(stroops);
  return `${v / STROOPS_PER_UNIT}.${(v % STROOPS_PER_UNIT).toString().padStart(AMOUNT_DECIMALS, '0')}`;
}

/** 2500000n -> "0.25", 0n -> "0": the shortest form (no trailing zeros), the way the marketplace API writes amounts. */
export function formatAmount(stroops: bigint | string): string {
  return fromStroops(stroops).replace(/\.?0+$/, '');
}

/**
 * The shortest form of an amount ("0.0100000", as PostgreSQL prints NUMERIC(20,7), becomes "0.01"). A string that
 * is not an amount is returned as it is, for the caller's rules to refuse with their own message.
 */
export function normalizeAmount(amount: string): string {
  return isAmount(amount) ? formatAmount(toStroops(amount)) : amount;
}
