// The public API of @governor/sqlite: an explicit list, pinned by index.test.ts.

export { createSqliteStore, type SqliteStore, type SqliteStoreOptions } from "./sqlite-store.ts";
