// The database file: its tables, and the two connections the store opens on it.

import { StoreError } from "@governor/core";
import { type Database, openDatabase } from "./sqlite-api.ts";
import { invalid } from "./store-errors.ts";

/**
 * The layout this version writes (`PRAGMA user_version`). A file of layout 1 is brought to it at
 * open ({@link UPGRADE_FROM_1}); another one is refused.
 */
export const SCHEMA_VERSION = 2;

/**
 * Layout 1 to 2: the ledger keeps each key's latest claim (`claimed_at`, see `ClaimResult.claimedAt`).
 * A pending row's claim is its `updated_at`, the `now` its claimer named it by (as layout 1's
 * settles compared); a row of any other state has none, so a late settle naming a claim made
 * before the upgrade leaves it as it is. Every process on the file must be upgraded together: one
 * still on layout 1 would claim without marking its claims.
 */
const UPGRADE_FROM_1 = `
ALTER TABLE governor_ledger ADD COLUMN claimed_at REAL;
UPDATE governor_ledger SET claimed_at = updated_at WHERE state = 'pending';
`;

/**
 * A claim that did not mark itself is marked by the file: a process still on layout 1 (its
 * connection open since before another process upgraded the file) claims with statements that
 * know no `claimed_at`, so its takeover of a key (a row made `pending` again, its mark left as the
 * previous holder's) would let that holder's late settle, naming the mark, free the key while the
 * layout 1 process's write is out. These triggers are part of the file's schema, so they run in
 * every writer's transaction, whatever its version: the claim gets a mark as layout 2 gives one
 * (its `now`, or one past the mark before when that is not earlier: `nextClaim`). A layout 2 claim
 * always writes a new mark, so they leave its claims alone; SQLite does not run a trigger from its
 * own update (recursive triggers are off). Only an update that sets `updated_at` is a claim: one
 * that does not (`release` dropping a pending row's owner) must leave the mark as it is, or the
 * holder's settle, naming it, would be dropped and the row held for good. A file whose trigger
 * fired on every update is given this one at open (`dropOldMarkTrigger`).
 */
const MARK_UNMARKED_CLAIMS = `
CREATE TRIGGER IF NOT EXISTS governor_ledger_mark_update AFTER UPDATE OF updated_at ON governor_ledger
  WHEN NEW.state = 'pending' AND NEW.claimed_at IS OLD.claimed_at
BEGIN
  UPDATE governor_ledger SET claimed_at = CASE
    WHEN OLD.claimed_at IS NULL OR NEW.updated_at > OLD.claimed_at THEN NEW.updated_at
    ELSE OLD.claimed_at + 1 END
  WHERE key = NEW.key;
END;
CREATE TRIGGER IF NOT EXISTS governor_ledger_mark_insert AFTER INSERT ON governor_ledger
  WHEN NEW.state = 'pending' AND NEW.claimed_at IS NULL
BEGIN
  UPDATE governor_ledger SET claimed_at = NEW.updated_at WHERE key = NEW.key;
END;
`;

/** Drops the mark trigger of a file whose trigger ran on every update of a pending row. */
function dropOldMarkTrigger(db: Database): void {
  const found = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?")
    .get(MARK_TRIGGER)?.sql;
  if (typeof found === "string" && !/UPDATE OF updated_at/i.test(found)) {
    db.exec(`DROP TRIGGER ${MARK_TRIGGER}`);
  }
}

/** The name of the trigger that marks a layout 1 writer's takeovers ({@link MARK_UNMARKED_CLAIMS}). */
const MARK_TRIGGER = "governor_ledger_mark_update";

const TABLES = `
CREATE TABLE IF NOT EXISTS governor_values (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  expires_at REAL
);
CREATE INDEX IF NOT EXISTS governor_values_expiry ON governor_values (expires_at)
  WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS governor_ledger (
  key TEXT PRIMARY KEY,
  args_hash TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed', 'uncertain')),
  updated_at REAL NOT NULL,
  lease_ms REAL NOT NULL,
  result TEXT,
  result_unavailable INTEGER NOT NULL DEFAULT 0,
  expires_at REAL,
  owner TEXT,
  claimed_at REAL
);
CREATE INDEX IF NOT EXISTS governor_ledger_unsettled ON governor_ledger (state)
  WHERE state IN ('pending', 'uncertain');
CREATE INDEX IF NOT EXISTS governor_ledger_expiry ON governor_ledger (expires_at)
  WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS governor_ledger_owner ON governor_ledger (owner)
  WHERE owner IS NOT NULL;
${MARK_UNMARKED_CLAIMS}
CREATE TABLE IF NOT EXISTS governor_outcomes (
  key TEXT PRIMARY KEY,
  counts TEXT NOT NULL,
  updated_at REAL NOT NULL,
  expires_at REAL NOT NULL,
  seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS governor_outcomes_seq ON governor_outcomes (seq);
CREATE INDEX IF NOT EXISTS governor_outcomes_expiry ON governor_outcomes (expires_at);
`;

/** The two connections of a store: one per durability. */
export interface Connections {
  /**
   * Claims and settles: `synchronous = FULL`, so each commit is on disk (fsync of the WAL) before
   * the claim or settle answers; a crash of the machine loses no answered claim.
   */
  readonly ledger: Database;
  /**
   * Values, counters and learned records (breaker state, retry budgets, advice): `synchronous =
   * NORMAL`, a commit per operation without its own fsync. In WAL mode a crash of the process
   * loses none of them; a crash of the machine may lose the last ones, which costs a budget or a
   * breaker a few counts, never a write twice.
   */
  readonly values: Database;
}

/**
 * Opens the file (creating it and its tables when new) in WAL mode, with the busy timeout on
 * both connections; throws when the file holds another layout or is not a database.
 */
export function openConnections(path: string, busyTimeoutMs: number): Connections {
  const ledger = openDatabase(path);
  let values: Database | undefined;
  try {
    configure(ledger, busyTimeoutMs, "FULL");
    ledger.exec("BEGIN IMMEDIATE");
    try {
      const version = Number(ledger.prepare("PRAGMA user_version").get()?.user_version ?? 0);
      if (version !== 0 && version !== 1 && version !== SCHEMA_VERSION) {
        throw new StoreError({
          reason: "misconfigured",
          operation: "open",
          message: `SqliteStore: open failed: the database holds layout version ${version}, this version of @governor/sqlite reads 1 (upgraded at open) and ${SCHEMA_VERSION}; use the version that wrote it, or another file.`,
        });
      }
      if (version === 1) ledger.exec(UPGRADE_FROM_1);
      dropOldMarkTrigger(ledger);
      ledger.exec(TABLES);
      ledger.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
      ledger.exec("COMMIT");
    } catch (error) {
      ledger.exec("ROLLBACK");
      throw error;
    }
    values = openDatabase(path);
    configure(values, busyTimeoutMs, "NORMAL");
    return { ledger, values };
  } catch (error) {
    values?.close();
    ledger.close();
    throw error;
  }
}

function configure(db: Database, busyTimeoutMs: number, synchronous: "FULL" | "NORMAL"): void {
  // The busy timeout first: switching to WAL waits for other connections' locks too.
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
  const mode = db.prepare("PRAGMA journal_mode = WAL").get()?.journal_mode;
  if (mode !== "wal" && mode !== "memory") {
    throw invalid(
      `the database would not switch to WAL mode (journal_mode is ${String(mode)}); use a file on a local disk`,
    );
  }
  db.exec(`PRAGMA synchronous = ${synchronous}`);
}
