// Learned outcome records in the `governor_outcomes` table: decayed and added to in one
// transaction, bounded by a cap (the least recently updated go first) and by their expiry.
import type { OutcomeRecord } from "@governor/core";
import { addToCounts } from "@governor/core/judge";
import type { Database, SqlValue } from "./sqlite-api.ts";
import { unexpectedRow } from "./store-errors.ts";
import { transaction } from "./transaction.ts";

export function createOutcomes(db: Database, maxOutcomes: number, clock: () => number) {
  const select = db.prepare(
    "SELECT counts, updated_at FROM governor_outcomes WHERE key = ? AND expires_at >= ?",
  );
  const upsert = db.prepare(
    "INSERT INTO governor_outcomes (key, counts, updated_at, expires_at, seq) VALUES (?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM governor_outcomes)) ON CONFLICT (key) DO UPDATE SET counts = excluded.counts, updated_at = excluded.updated_at, expires_at = excluded.expires_at, seq = excluded.seq",
  );
  const purge = db.prepare("DELETE FROM governor_outcomes WHERE expires_at < ?");
  // Past the cap, the records updated longest ago (by the order of their updates) go.
  const trim = db.prepare(
    "DELETE FROM governor_outcomes WHERE key IN (SELECT key FROM governor_outcomes ORDER BY seq DESC LIMIT -1 OFFSET ?)",
  );
  const list = db.prepare(
    "SELECT key, counts, updated_at FROM governor_outcomes WHERE expires_at >= ? ORDER BY updated_at DESC, seq DESC LIMIT ?",
  );
  const all = db.prepare("DELETE FROM governor_outcomes");
  const under = db.prepare("DELETE FROM governor_outcomes WHERE instr(key, ?) = 1");

  const toRecord = (key: string, row: Record<string, SqlValue>): OutcomeRecord => {
    const counts = JSON.parse(String(row.counts)) as unknown;
    if (typeof counts !== "object" || counts === null || typeof row.updated_at !== "number") {
      throw unexpectedRow("outcome");
    }
    return { key, counts: counts as Record<string, number>, updatedAt: row.updated_at };
  };

  return {
    add(key: string, field: string, by: number, now: number, halfLifeMs: number, ttlMs: number) {
      return transaction(db, (): OutcomeRecord => {
        const time = clock();
        purge.run(time);
        const row = select.get(key, time);
        const before = row === undefined ? undefined : toRecord(key, row);
        const next = { key, ...addToCounts(before, field, by, now, halfLifeMs) };
        upsert.run(key, JSON.stringify(next.counts), next.updatedAt, time + ttlMs);
        trim.run(maxOutcomes);
        return next;
      });
    },

    get(key: string): OutcomeRecord | undefined {
      const row = select.get(key, clock());
      return row === undefined ? undefined : toRecord(key, row);
    },

    list(limit: number): OutcomeRecord[] {
      return list.all(clock(), limit).map((row) => toRecord(String(row.key), row));
    },

    reset(prefix: string | undefined): number {
      return transaction(db, () => {
        purge.run(clock());
        const { changes } = prefix === undefined ? all.run() : under.run(prefix);
        return Number(changes);
      });
    },
  };
}
