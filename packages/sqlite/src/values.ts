// Values and counters in the `governor_values` table, as JSON text with an expiry by the store's
// clock; rows past it read as absent and are deleted by the next write.
import { GovernorError } from "@governor/core";
import type { Database } from "./sqlite-api.ts";
import { transaction } from "./transaction.ts";

export function createValues(db: Database, clock: () => number) {
  const select = db.prepare(
    "SELECT value, expires_at FROM governor_values WHERE key = ? AND (expires_at IS NULL OR expires_at >= ?)",
  );
  const upsert = db.prepare(
    "INSERT INTO governor_values (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
  );
  const remove = db.prepare("DELETE FROM governor_values WHERE key = ?");
  const purge = db.prepare("DELETE FROM governor_values WHERE expires_at < ?");

  return {
    get(key: string): string | undefined {
      const row = select.get(key, clock());
      return row === undefined ? undefined : String(row.value);
    },

    /** Writes JSON text (undefined deletes), expiring `ttlMs` from now when given. */
    set(key: string, json: string | undefined, ttlMs: number | undefined): void {
      transaction(db, () => {
        const time = clock();
        purge.run(time);
        if (json === undefined) remove.run(key);
        else upsert.run(key, json, ttlMs === undefined ? null : time + ttlMs);
      });
    },

    /**
     * Adds `by` to the counter at `key`: a new one starts at 0 and expires `ttlMs` from now; an
     * existing one keeps its expiry (a value without one gets it, like Redis's PEXPIRE NX).
     */
    increment(key: string, by: number, ttlMs: number): number {
      return transaction(db, () => {
        const time = clock();
        purge.run(time);
        const row = select.get(key, time);
        let current = 0;
        let expiresAt = time + ttlMs;
        if (row !== undefined) {
          const value = JSON.parse(String(row.value)) as unknown;
          if (typeof value !== "number" || !Number.isSafeInteger(value)) {
            throw new GovernorError(
              "store_error",
              `increment: the value at "${key}" is not an integer counter; use another key for counters.`,
            );
          }
          current = value;
          if (row.expires_at !== null) expiresAt = Number(row.expires_at);
        }
        const next = current + by;
        upsert.run(key, String(next), expiresAt);
        return next;
      });
    },
  };
}
