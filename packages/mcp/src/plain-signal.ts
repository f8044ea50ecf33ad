/** An `abort` listener of a {@link PlainAbortSignal}: a function, or an object with `handleEvent`. */
type AbortListener =
  | ((this: unknown, event: AbortEvent) => void)
  | { handleEvent(event: AbortEvent): void };

/** The event a {@link PlainAbortSignal} hands its listeners: `type` and `target` as an `Event`'s. */
interface AbortEvent {
  readonly type: "abort";
  readonly target: PlainAbortSignal;
  readonly currentTarget: PlainAbortSignal;
}

/**
 * The part of `AbortSignal` that Governor's core, both MCP SDKs' `request` and the proxy read of a
 * signal (`aborted`, `reason`, `throwIfAborted`, `onabort`, `addEventListener` and
 * `removeEventListener` of `abort`, with `once`; the event's `target` is the signal), as a plain
 * object. Two uses: the signal the adapter gives the SDK for one attempt (it aborts when the run
 * cuts the attempt: core's `ctx.onAbort`), and the signal of one host tools/call in
 * `governor proxy` (aborted by the host's cancel or the transport's close).
 *
 * Why not an `AbortController`'s: on Node 20 making an `AbortSignal` (an `EventTarget` whose
 * prototype is set after) costs about 2 to 5 µs and 1.5 KB a call, the listener the core adds and
 * removes per call about 1 µs more, and a call that is not cut, nearly every one, needs none of
 * it. SDK 1.32 adds an abort listener it never removes: this object, and the listener with it,
 * dies with its attempt.
 */
export class PlainAbortSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: ((this: unknown, event: AbortEvent) => void) | null = null;
  #listeners: AbortListener[] | undefined;

  /** Aborts with `reason` (an `AbortError` when none), once; calls the listeners in order. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason =
      reason === undefined
        ? Object.assign(new Error("This operation was aborted"), { name: "AbortError" })
        : reason;
    const event: AbortEvent = { type: "abort", target: this, currentTarget: this };
    const listeners = this.#listeners;
    this.#listeners = undefined;
    this.#call(this.onabort, event);
    if (listeners !== undefined) for (const listener of listeners) this.#call(listener, event);
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /**
   * Adds an `abort` listener once (as an `EventTarget` does, a listener added twice is called
   * once); none after the abort, which is over. Every listener runs once, so `once` changes
   * nothing.
   */
  addEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    if (type !== "abort" || listener === null || this.aborted) return;
    if (this.#listeners === undefined) {
      this.#listeners = [listener];
      return;
    }
    if (!this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    const listeners = this.#listeners;
    if (type !== "abort" || listener === null || listeners === undefined) return;
    const at = listeners.indexOf(listener);
    if (at === -1) return;
    if (listeners.length === 1) this.#listeners = undefined;
    else listeners.splice(at, 1);
  }

  /** Typed as what an `AbortSignal` parameter asks for (`ToolCall.signal`, the SDKs' `RequestOptions.signal`). */
  asSignal(): AbortSignal {
    return this as unknown as AbortSignal;
  }

  #call(listener: AbortListener | null, event: AbortEvent): void {
    if (listener === null) return;
    try {
      if (typeof listener === "function") listener.call(this, event);
      else listener.handleEvent(event);
    } catch (error) {
      // As an EventTarget does: a listener's error does not stop the others; it is reported.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
