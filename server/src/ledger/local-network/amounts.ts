import { ASSET_DECIMALS } from './constants';

const SCALE = 10n ** BigInt(ASSET_DECIMALS);
const DECIMAL_PATTERN = /^(\d+)(?:\.(\d{1,7}))?$/;

/** Parses a non-negative decimal string with at most 7 fractional digits ("12.5") into stroops (125000000n). */
export function toStroops(amount: string): bigint {
  const match = DECIMAL_PATTERN.exec(amount.trim());
  if (!match) {
    throw new Error(`invalid amount "${amount}": expected a non-negative decimal with at most 7 fractional digits`);
  }
  const whole = BigInt(match[1]);
  const fraction = BigInt((match[2] ?? '').padEnd(ASSET_DECIMALS, '0'));
  return whole * SCALE + fraction;
}

/** Formats stroops as a decimal string without trailing zeros: 125000000n -> "12.5", 0n -> "0". */
export function fromStroops(stroops: bigint): string {
  const negative = stroops < 0n;
  const abs = negative ? -stroops : stroops;
  const whole = abs / SCALE;
  const fraction = (abs % SCALE).toString().padStart(ASSET_DECIMALS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
