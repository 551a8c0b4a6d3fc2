/** How long an `Idempotency-Key` and its stored answer are kept (the retention worker deletes older ones). */
export const IDEMPOTENCY_KEEP_HOURS = 24;
