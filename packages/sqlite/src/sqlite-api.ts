// What the store uses of Node's built-in `node:sqlite`, typed here and loaded at run time, so that
// the package compiles against any @types/node and a Node without the module gets a clear error.
import { GovernorError } from "@governor/core";

/** A value SQLite hands back or takes: the store binds and reads only these. */
export type SqlValue = string | number | null;

/** A prepared statement of `node:sqlite` (`StatementSync`), as far as the store uses it. */
export interface Statement {
  run(...params: SqlValue[]): { changes: number | bigint };
  get(...params: SqlValue[]): Record<string, SqlValue> | undefined;
  all(...params: SqlValue[]): Record<string, SqlValue>[];
}

/** A connection of `node:sqlite` (`DatabaseSync`), as far as the store uses it. */
export interface Database {
  exec(sql: string): void;
  prepare(sql: string): Statement;
  close(): void;
}

interface SqliteModule {
  DatabaseSync: new (path: string) => Database;
}

/** The first Node release with `node:sqlite` unflagged. */
export const MIN_NODE = "22.13";

/**
 * `node:sqlite`, or undefined on a Node without it (before 22.13 it needs `--experimental-sqlite`;
 * Node 20 has none).
 */
export function sqliteModule(): SqliteModule | undefined {
  const load = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  if (typeof load !== "function") return undefined;
  try {
    const loaded = load("node:sqlite") as SqliteModule | undefined;
    return typeof loaded?.DatabaseSync === "function" ? loaded : undefined;
  } catch {
    return undefined;
  }
}

/** Opens a connection to the file at `path`; throws a clear error when Node has no `node:sqlite`. */
export function openDatabase(path: string): Database {
  const sqlite = sqliteModule();
  if (sqlite === undefined) {
    throw new GovernorError(
      "invalid_options",
      `createSqliteStore: this Node (${process.version}) has no node:sqlite; use Node ${MIN_NODE} or later (22.5 to 22.12 need --experimental-sqlite).`,
    );
  }
  return new sqlite.DatabaseSync(path);
}
