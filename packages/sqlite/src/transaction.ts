import type { Database } from "./sqlite-api.ts";

/**
 * Runs `body` in one transaction that takes the file's write lock at its start (`BEGIN
 * IMMEDIATE`: another process waits up to the busy timeout, never interleaves), committed when
 * `body` returns, rolled back when it throws.
 */
export function transaction<T>(db: Database, body: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  let result: T;
  try {
    result = body();
    db.exec("COMMIT");
  } catch (error) {
    try {
      db.exec("ROLLBACK");
    } catch {
      // No transaction left to roll back (SQLite ended it on the error itself).
    }
    throw error;
  }
  return result;
}
