import { fromStroops, toStroops, type Stroops } from '../domain/amount';

/**
 * Amount columns (NUMERIC(20,7)) <-> the domain's Stroops: the data layer's one conversion of money. PostgreSQL
 * prints such a column as "0.0100000", which is an amount; the domain never sees the decimal string.
 */
export function stroopsColumn(value: unknown): Stroops {
  return toStroops(String(value));
}

/** Stroops as an amount column takes them ("0.0100000"). */
export function amountColumn(amount: Stroops): string {
  return fromStroops(amount);
}
