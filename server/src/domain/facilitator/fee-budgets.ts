import type { FeeScope } from './types';

/**
 * Default daily fee budgets (stroops per UTC day and network; 1 XLM = 10,000,000 stroops), issue #29. A settlement's
 * fee is about 16,000 stroops on the local network: a seller ~6,000 sponsored settlements a day, a payer ~600, an
 * anonymous client address ~1,200, the whole facilitator ~60,000. 0 in configuration = unlimited (an explicit
 * choice only). server/README.md "Configuration" and "Threat model" say the same.
 */
export const DEFAULT_FEE_BUDGETS: Readonly<Record<FeeScope, number>> = {
  seller: 100_000_000,
  payer: 10_000_000,
  client: 100_000_000,
  global: 1_000_000_000,
};
