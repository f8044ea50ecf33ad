/**
 * Store doubles for the tests outside core's run/: a store that forwards every operation to an
 * inner store, with some replaced (to watch claims or settles, or to make one fail).
 */
import { createMemoryStore, type Store } from "@governor/core";

/**
 * `inner` (a new memory store by default) as a `Store` with the operations in `over` replaced and
 * the six required ones forwarded; no optional method (no `release`, no learning).
 */
export function forwardingStore(over: Partial<Store>, inner: Store = createMemoryStore()): Store {
  return {
    get: (key) => inner.get(key),
    set: (key, value, ttlMs) => inner.set(key, value, ttlMs),
    increment: (key, by, ttlMs) => inner.increment(key, by, ttlMs),
    claim: (key, argsHash, options) => inner.claim(key, argsHash, options),
    settle: (key, state, options) => inner.settle(key, state, options),
    entry: (key) => inner.entry(key),
    ...over,
  };
}
