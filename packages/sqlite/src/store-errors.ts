import { GovernorError, StoreError, type StoreErrorReason } from "@governor/core";

/** SQLite's primary result codes the store names (the low byte of an extended code). */
const CODES: Readonly<Record<number, [StoreErrorReason, string]>> = {
  5: ["timeout", "the database stayed locked by another connection past busyTimeoutMs"],
  6: ["timeout", "a table stayed locked past busyTimeoutMs"],
  7: ["unavailable", "SQLite ran out of memory"],
  8: ["rejected", "the database file is read-only"],
  10: ["unavailable", "a disk I/O error"],
  11: ["rejected", "the database file is corrupt"],
  13: ["unavailable", "the disk is full"],
  14: ["unavailable", "the database file could not be opened"],
  23: ["rejected", "access to the database was denied"],
  26: ["misconfigured", "the file is not an SQLite database"],
};

/**
 * Turns any failure of a store operation into a {@link StoreError} whose message names the
 * operation and a fixed reason, never the file's path or a key (SQLite's own error is the `cause`,
 * for the host's logs). A GovernorError (bad input, a StoreError already) passes through.
 */
export function toStoreError(operation: string, error: unknown): GovernorError {
  if (GovernorError.isInstance(error)) return error;
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  const known = typeof errcode === "number" ? CODES[errcode & 0xff] : undefined;
  const [reason, detail] = known ?? ["rejected", "SQLite answered with an error"];
  return new StoreError({
    reason,
    operation,
    message: `SqliteStore: ${operation} failed: ${detail}.`,
    cause: error,
  });
}

/** A row that is not what the store wrote: another program changed the file. */
export function unexpectedRow(operation: string): StoreError {
  return new StoreError({
    reason: "rejected",
    operation,
    message:
      "SqliteStore: unexpected data in the database; is another program writing to this file?",
  });
}

export function invalid(message: string): GovernorError {
  return new GovernorError("invalid_options", `createSqliteStore: ${message}.`);
}
