import { fromStroops, toStroops } from './amounts.js';

/** Thrown before anything is signed when a payment would exceed the per-call or the client's cumulative budget. */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
  readonly code = 'BUDGET_EXCEEDED';
  constructor(
    message: string,
    /** Decimal amount the resource asks. */
    readonly requested: string,
    /** Decimal amount that was still allowed (per call or cumulative, whichever refused). */
    readonly remaining: string,
    readonly limit: 'perCall' | 'total',
  ) {
    super(message);
  }
}

export interface BudgetOptions {
  /** Most one call may pay, decimal units of the asset (e.g. "0.05"). */
  perCall?: string;
  /** Most this client pays in total over its lifetime, decimal units (e.g. "1"). */
  total?: string;
}

/**
 * Spending limits of a buyer client. Amounts are counted in stroops per asset is not distinguished: budgets are
 * meant for one asset (usually USDC). Reservations are made before signing and released if the payment fails.
 */
export class Budget {
  private spent = 0n;
  private readonly perCall: bigint | null;
  private readonly total: bigint | null;

  constructor(options: BudgetOptions = {}) {
    this.perCall = options.perCall !== undefined ? toStroops(options.perCall) : null;
    this.total = options.total !== undefined ? toStroops(options.total) : null;
  }

  /** Reserves `stroops`, or throws BudgetExceededError. `perCallOverride` is the call's own maxAmount. */
  reserve(stroops: bigint, perCallOverride?: string): void {
    const perCall = perCallOverride !== undefined ? toStroops(perCallOverride) : this.perCall;
    if (perCall !== null && stroops > perCall)
      throw new BudgetExceededError(`Payment of ${fromStroops(stroops)} exceeds the per-call budget of ${fromStroops(perCall)}`, fromStroops(stroops), fromStroops(perCall), 'perCall');
    if (this.total !== null && this.spent + stroops > this.total) {
      const left = this.total - this.spent;
      throw new BudgetExceededError(`Payment of ${fromStroops(stroops)} exceeds the remaining budget of ${fromStroops(left)}`, fromStroops(stroops), fromStroops(left), 'total');
    }
    this.spent += stroops;
  }

  release(stroops: bigint): void {
    this.spent -= stroops;
  }

  /** Decimal amount spent (reserved) so far. */
  get spentAmount(): string {
    return fromStroops(this.spent);
  }
}
