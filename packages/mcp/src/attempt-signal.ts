/** The `abort` listeners of one {@link AttemptSignal}. */
type AbortListener = (this: unknown, event: { readonly type: "abort" }) => void;

/**
 * The signal the adapter gives the SDK for one attempt: the part of `AbortSignal` both SDKs'
 * `request` use (`aborted`, `reason`, `throwIfAborted`, `addEventListener` and
 * `removeEventListener` of `abort`), as a plain object. It aborts when the run cuts the attempt
 * (core's `ctx.onAbort`: the run's abort, end or deadline, or the call's signal).
 *
 * Why not `ctx.signal`: on Node 20 making an `AbortSignal` costs about 5 µs, a third of a whole
 * in-memory `callTool`, and the success path needs none. SDK 1.32 adds an abort listener it
 * never removes: this object, and the listener with it, dies with its attempt.
 */
export class AttemptSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: AbortListener | null = null;
  #listeners: AbortListener[] | undefined;

  /** Aborts with `reason` (an `AbortError` when none), once; calls the listeners in order. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason =
      reason === undefined
        ? Object.assign(new Error("This operation was aborted"), { name: "AbortError" })
        : reason;
    const event = { type: "abort" as const };
    const listeners = this.#listeners;
    this.#listeners = undefined;
    this.onabort?.call(this, event);
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener.call(this, event);
      } catch (error) {
        // As an EventTarget does: a listener's error does not stop the others.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    if (type !== "abort" || listener === null || this.aborted) return;
    this.#listeners ??= [];
    if (!this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    if (type !== "abort" || listener === null || this.#listeners === undefined) return;
    const at = this.#listeners.indexOf(listener);
    if (at !== -1) this.#listeners.splice(at, 1);
  }

  /** Typed as what the SDKs' `RequestOptions.signal` asks for. */
  asSignal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}
