/**
 * A failure inside the simulated Soroban host, rendered the way the real host reports it
 * ("HostError: Error(Auth, InvalidAction)") followed by a plain explanation.
 */
export type HostErrorType = 'Auth' | 'Contract' | 'Storage' | 'Value' | 'Crypto' | 'Budget' | 'Context';

/** Stellar Asset Contract error codes (soroban-env-host `ContractError`). */
export const SacError = {
  NegativeAmount: 8,
  Balance: 10,
  BalanceDeauthorized: 11,
  Overflow: 12,
  TrustlineMissing: 13,
  AccountMissing: 6,
  OperationNotSupported: 2,
} as const;

export class HostError extends Error {
  constructor(
    readonly type: HostErrorType,
    readonly code: string | number,
    readonly detail: string,
  ) {
    super(`HostError: Error(${type}, ${typeof code === 'number' ? `#${code}` : code})\n\n${detail}`);
    this.name = 'HostError';
  }
}
