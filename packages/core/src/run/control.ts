// Values the attempt loop passes between its steps (never seen by a host or the model).

/** What judging a failure returns to ask for another attempt after `delayMs` (thrown to p-retry). */
export class RetryRequest extends Error {
  constructor(readonly delayMs: number) {
    super("retry");
  }
}

/** Carries a value to throw past p-retry untouched (it would wrap a non-Error). */
export class Escape extends Error {
  constructor(readonly value: unknown) {
    super("escape");
  }
}
