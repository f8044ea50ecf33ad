/**
 * `--store`: where the proxy's governor keeps its ledger, breakers and budgets. `sqlite:PATH` (a
 * file on this machine, `@governor/sqlite`) or `redis://…` / `rediss://…` (`@governor/redis`);
 * without it, the memory store of the process. The store packages are loaded only when asked for,
 * so the CLI runs without them installed.
 */
import type { Store } from "@governor/core";

/** A `--store` value, parsed. */
export type StoreSpec =
  | { readonly kind: "sqlite"; readonly path: string }
  | { readonly kind: "redis"; readonly url: string };

/** What `--store` accepts, for error messages. */
export const STORE_FORMS = "sqlite:PATH (a file on this machine) or redis://HOST[:PORT][/DB]";

/** A store the proxy opened, and how to close it at shutdown. */
export interface OpenedStore {
  readonly store: Store;
  close(): Promise<void>;
}

/** Parses a `--store` value; undefined with the reason when it is neither form. */
export function parseStoreSpec(text: string): StoreSpec | { readonly problem: string } {
  if (text.startsWith("sqlite:")) {
    const path = text.slice("sqlite:".length);
    if (path === "") return { problem: "sqlite: needs a file path, e.g. sqlite:./governor.db" };
    return { kind: "sqlite", path };
  }
  if (/^rediss?:\/\//i.test(text)) {
    let host = "";
    try {
      host = new URL(text).hostname;
    } catch {
      // Told below.
    }
    if (host === "") return { problem: "not a valid redis:// URL (it needs a host)" };
    return { kind: "redis", url: text };
  }
  return { problem: `expected ${STORE_FORMS}` };
}

/** Opens the store; throws an Error whose message says what went wrong and what to do. */
export async function openStore(spec: StoreSpec): Promise<OpenedStore> {
  if (spec.kind === "sqlite") {
    const { createSqliteStore } =
      await loadStorePackage<typeof import("@governor/sqlite")>("@governor/sqlite");
    const store = createSqliteStore({ path: spec.path });
    return { store, close: async () => store.close() };
  }
  const { createRedisStore } =
    await loadStorePackage<typeof import("@governor/redis")>("@governor/redis");
  const store = createRedisStore({ url: spec.url });
  // The first command connects and checks the server: a bad one is told at start, not at a call.
  await store.entry("governor-proxy:connect-check");
  return { store, close: () => store.close() };
}

/** A store package by dynamic import, or an error saying how to install it. */
async function loadStorePackage<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    const missing =
      (error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" &&
      String((error as Error).message).includes(`'${name}'`);
    if (!missing) throw error;
    throw new Error(
      `${name} is not installed: install it next to the CLI (npm i ${name}; npm i -g ${name} beside a global governor)`,
    );
  }
}
