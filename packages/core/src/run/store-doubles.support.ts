// Stores for the run's tests: the memory store with some operations replaced. Test support only
// (`*.support.ts` is left out of the build).
import { createMemoryStore, type MemoryStore } from "../store/memory-store.ts";
import type { ClaimOptions, Store } from "../store/store.ts";

/**
 * `memory` as a `Store` with some operations replaced (`over`), the others forwarded to it; with
 * `release`, its `Store.release` too (a store that drops a run's own keys when the run ends).
 */
export function memoryStoreWith(
  over: Partial<Store>,
  memory: MemoryStore = createMemoryStore(),
  { release = false }: { release?: boolean } = {},
): Store {
  return {
    get: (k) => memory.get(k),
    set: (k, v, t) => memory.set(k, v, t),
    increment: (k, b, t) => memory.increment(k, b, t),
    claim: (k, h, o) => memory.claim(k, h, o),
    settle: (k, st, o) => memory.settle(k, st, o),
    entry: (k) => memory.entry(k),
    ...(release && { release: (owner: string) => memory.release(owner) }),
    ...over,
  };
}

/**
 * A store whose claims answer later (a remote store), each after `delays.shift()` (ms, or a promise); with
 * `release` (the default) as the memory store, without as a store that keeps every entry for its
 * retention (Redis).
 */
export function laterClaims(
  memory: MemoryStore,
  /** Per claim, in order: ms to wait, or a promise to wait for (an order no load can change). */
  delays: (number | Promise<unknown>)[],
  { release = true }: { release?: boolean } = {},
): Store {
  const claim = async (k: string, h: string, o: ClaimOptions) => {
    const delay = delays.shift() ?? 0;
    if (typeof delay === "number") await new Promise((resolve) => setTimeout(resolve, delay));
    else await delay;
    return memory.claim(k, h, o);
  };
  return memoryStoreWith({ claim }, memory, { release });
}

/** A promise and what settles it: a claim of `laterClaims` that waits for another call's end. */
export function signalled(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
