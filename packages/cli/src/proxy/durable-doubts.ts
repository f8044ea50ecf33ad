/**
 * Writes in doubt that outlive the proxy's process. With `--store`, a stop that names an
 * idempotency key (a write that may have happened) is also written to the store, by content
 * (server, tool, canonical arguments), so a restarted proxy, or another proxy on the same store,
 * refuses the identical call although its stop memory (stops.ts) is new. It refuses it while the
 * key's ledger entry is still `pending` or `uncertain`: once a person settles the key
 * (`governor.settle`), the identical call is a new write again.
 */
import type { Reason, Store } from "@governor/core";
import { hashArgs } from "@governor/core/judge";
import type { RememberedStop } from "./stops.ts";

/** What the store holds for a write in doubt. */
interface DoubtRecord {
  readonly key: string;
  readonly reason: Reason;
}

export interface DurableDoubts {
  /** Records a write in doubt of `tool` with `args` under its idempotency key. */
  record(
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
    stop: RememberedStop,
  ): Promise<void>;
  /** A stop for this call when an identical write is still in doubt in the store. */
  blocking(
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
  ): Promise<RememberedStop | undefined>;
}

/** The store's name of a call's write in doubt (a value, apart from the ledger's keys). */
function doubtKey(server: string | undefined, tool: string, args: unknown): string {
  return `proxy-doubt:${server ?? ""}:${tool}:${hashArgs(args ?? {})}`;
}

export function createDurableDoubts(store: Store, server: string | undefined): DurableDoubts {
  return {
    async record(tool, args, stop) {
      if (stop.idempotencyKey === undefined) return;
      const record: DoubtRecord = { key: stop.idempotencyKey, reason: stop.reason };
      // No expiry: it goes when its key is settled (see `blocking`).
      await store.set(doubtKey(server, tool, args), record);
    },

    async blocking(tool, args) {
      const name = doubtKey(server, tool, args);
      const found = await store.get<DoubtRecord>(name);
      if (found === undefined || typeof found?.key !== "string") return undefined;
      const entry = await store.entry(found.key);
      // Gone from the ledger it cannot be: uncertain entries never expire. Absent, it was never
      // claimed there (a JSON-RPC error before the claim): kept in doubt all the same.
      if (entry !== undefined && entry.state !== "pending" && entry.state !== "uncertain") {
        await store.set(name, undefined);
        return undefined;
      }
      return {
        reason: found.reason,
        scope: "call",
        tool,
        until: Number.POSITIVE_INFINITY,
        idempotencyKey: found.key,
      };
    },
  };
}
