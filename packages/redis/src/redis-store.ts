import type { ClaimOptions, ClaimResult, LedgerEntry, LedgerState, Store } from "@governor/core";
import { GovernorError } from "@governor/core";
import { createClient, type RedisClientType } from "redis";
import { CLAIM, INCREMENT, type Script, SETTLE } from "./scripts.ts";

/** What the store needs of a node-redis client: any `createClient()` result fits. */
export type RedisStoreClient = Pick<RedisClientType, "sendCommand">;

/** Options of {@link createRedisStore}: give a `client` or a `url`. */
export interface RedisStoreOptions {
  /**
   * A connected node-redis client. The store only sends commands with it; `close()` leaves it
   * open. Use this for TLS, auth, sentinel or your own reconnect and offline-queue settings.
   * @default none: a client is created from `url`
   */
  readonly client?: RedisStoreClient;
  /**
   * `redis[s]://[[user][:password]@]host[:port][/db]`. The store creates, connects and owns a client
   * (closed by `close()`) that fails commands at once while disconnected rather than queueing
   * them, so a lost server turns into errors, never into calls that hang.
   * @default none: `client` is used
   */
  readonly url?: string;
  /**
   * Prepended to every Redis key (see the README for the layout). On Redis Cluster, put a hash
   * tag in it (`"{governor}:"`) so that a script's keys share a slot.
   * @default "governor:"
   */
  readonly prefix?: string;
  /**
   * How long settled (`succeeded` / `failed`) ledger entries are kept, in ms (PEXPIRE).
   * @default 86_400_000 (24 h)
   */
  readonly retentionMs?: number;
  /**
   * Hard cap on unsettled (`pending` / `uncertain`) ledger entries under this prefix. When it is
   * reached, claims of new keys answer `ledger_full` (fail-closed).
   * @default 10_000
   */
  readonly maxUnsettled?: number;
  /**
   * How long a command waits for the owned client's first connection (or a reconnection), in ms.
   * @default 5_000
   */
  readonly connectTimeoutMs?: number;
  /**
   * Receives the owned client's connection errors (it reconnects on its own; commands sent
   * meanwhile fail with a `store_error`). node-redis requires a listener, so the default exists.
   * @default ignore them
   */
  readonly onError?: (error: Error) => void;
}

/** A {@link Store} on a Redis server: every method answers with a promise. */
export interface RedisStore extends Store {
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  increment(key: string, by: number, ttlMs: number): Promise<number>;
  claim(key: string, argsHash: string, options: ClaimOptions): Promise<ClaimResult>;
  settle(
    key: string,
    state: Exclude<LedgerState, "pending">,
    options: { readonly now: number; readonly result?: unknown },
  ): Promise<void>;
  entry(key: string): Promise<LedgerEntry | undefined>;
  /** Closes the client the store created from `url`; does nothing to a client passed in. */
  close(): Promise<void>;
}

const STATUSES = new Set(["claimed", "in_flight", "args_mismatch", "succeeded", "uncertain"]);
const STATES = new Set<string>(["pending", "succeeded", "failed", "uncertain"]);

/**
 * A {@link Store} shared by many workers on many machines through one Redis server: claims and
 * settles are Lua scripts, so two workers can never both claim one key; counters are INCRBY with
 * the expiry set in the same script. Pending and uncertain entries never expire and are counted
 * in a set, for the fail-closed cap.
 *
 * @example
 * const store = createRedisStore({ url: process.env.REDIS_URL });
 * // ... use it as the runtime's store; on shutdown:
 * await store.close();
 */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const prefix = options.prefix ?? "governor:";
  const retentionMs = Math.ceil(positive("retentionMs", options.retentionMs ?? 86_400_000));
  const maxUnsettled = options.maxUnsettled ?? 10_000;
  if (!Number.isSafeInteger(maxUnsettled) || maxUnsettled < 1) {
    throw invalid(`maxUnsettled must be a positive integer, got ${String(maxUnsettled)}`);
  }
  const connectTimeoutMs = positive("connectTimeoutMs", options.connectTimeoutMs ?? 5_000);
  if ((options.client === undefined) === (options.url === undefined)) {
    throw invalid("give exactly one of client (a connected node-redis client) or url");
  }

  const owned = options.client === undefined ? own(options.url as string) : undefined;
  const client: RedisStoreClient = options.client ?? (owned as Owned).client;
  const valueKey = (key: string) => `${prefix}v:${key}`;
  const entryKey = (key: string) => `${prefix}l:${key}`;
  const unsettledKey = `${prefix}unsettled`;

  async function send(args: string[]): Promise<unknown> {
    if (owned !== undefined) await owned.whenReady();
    return client.sendCommand(args);
  }

  async function run(script: Script, keys: string[], args: string[]): Promise<unknown> {
    const rest = [String(keys.length), ...keys, ...args];
    try {
      return await send(["EVALSHA", script.sha1, ...rest]);
    } catch (error) {
      // A restarted or flushed server forgot the script: EVAL sends it and caches it again.
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await send(["EVAL", script.source, ...rest]);
    }
  }

  /** Runs one operation, turning any failure into a `store_error` that says which and where. */
  async function attempt<T>(operation: string, key: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (error) {
      if (GovernorError.isInstance(error)) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new GovernorError(
        "store_error",
        `RedisStore: ${operation} of "${key}" failed: ${message}`,
        { cause: error },
      );
    }
  }

  return {
    get<T>(key: string): Promise<T | undefined> {
      return attempt("get", key, async () => {
        const reply = await send(["GET", valueKey(key)]);
        return reply === null ? undefined : (JSON.parse(String(reply)) as T);
      });
    },

    set<T>(key: string, value: T, ttlMs?: number): Promise<void> {
      return attempt("set", key, async () => {
        const json = JSON.stringify(value) as string | undefined;
        if (json === undefined) {
          await send(["DEL", valueKey(key)]);
        } else if (ttlMs === undefined) {
          await send(["SET", valueKey(key), json]);
        } else {
          const px = String(Math.ceil(positive("ttlMs", ttlMs)));
          await send(["SET", valueKey(key), json, "PX", px]);
        }
      });
    },

    increment(key: string, by: number, ttlMs: number): Promise<number> {
      return attempt("increment", key, async () => {
        if (!Number.isSafeInteger(by)) {
          throw invalid(`increment: by must be a safe integer, got ${String(by)}`);
        }
        const px = String(Math.ceil(positive("ttlMs", ttlMs)));
        return Number(await run(INCREMENT, [valueKey(key)], [String(by), px]));
      });
    },

    claim(key: string, argsHash: string, claim: ClaimOptions): Promise<ClaimResult> {
      return attempt("claim", key, async () => {
        const reply = await run(
          CLAIM,
          [entryKey(key), unsettledKey],
          [
            argsHash,
            String(claim.now),
            claim.allowUncertain ? "1" : "0",
            String(claim.leaseMs),
            String(maxUnsettled),
            key,
          ],
        );
        const [status, hash, state, updatedAt, result] = strings(reply);
        if (status === "ledger_full") return { status };
        if (status === undefined || !STATUSES.has(status)) throw unexpected(reply);
        const entry = toEntry(key, hash, state, updatedAt, result);
        return { status, entry } as ClaimResult;
      });
    },

    settle(
      key: string,
      state: Exclude<LedgerState, "pending">,
      settlement: { readonly now: number; readonly result?: unknown },
    ): Promise<void> {
      return attempt("settle", key, async () => {
        const result =
          settlement.result === undefined
            ? ""
            : ((JSON.stringify(settlement.result) as string | undefined) ?? "");
        await run(
          SETTLE,
          [entryKey(key), unsettledKey],
          [state, String(settlement.now), result, String(retentionMs), key],
        );
      });
    },

    entry(key: string): Promise<LedgerEntry | undefined> {
      return attempt("entry", key, async () => {
        const reply = await send([
          "HMGET",
          entryKey(key),
          "argsHash",
          "state",
          "updatedAt",
          "result",
        ]);
        const [hash, state, updatedAt, result] = strings(reply);
        return state === "" ? undefined : toEntry(key, hash, state, updatedAt, result);
      });
    },

    async close(): Promise<void> {
      await owned?.close();
    },
  };

  function own(url: string): Owned {
    const client = createClient({ url, disableOfflineQueue: true });
    const onError = options.onError ?? (() => {});
    client.on("error", onError);
    let closed = false;
    let waiting: Promise<void> | undefined;
    // Connecting is retried by the client itself; commands wait for it (see whenReady).
    client.connect().catch(() => {});
    return {
      client,
      whenReady(): Promise<void> {
        if (client.isReady) return Promise.resolve();
        if (closed) return Promise.reject(new Error("the store was closed"));
        waiting ??= new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            client.off("ready", ready);
            waiting = undefined;
            reject(new Error(`no connection to ${redactUrl(url)} within ${connectTimeoutMs} ms`));
          }, connectTimeoutMs);
          const ready = () => {
            clearTimeout(timer);
            waiting = undefined;
            resolve();
          };
          client.once("ready", ready);
        });
        return waiting;
      },
      async close(): Promise<void> {
        if (closed) return;
        closed = true;
        if (client.isReady) await client.close();
        else client.destroy();
      },
    };
  }
}

/** A client the store created from a URL, and so connects and closes. */
interface Owned {
  readonly client: RedisStoreClient;
  whenReady(): Promise<void>;
  close(): Promise<void>;
}

function toEntry(
  key: string,
  argsHash: string | undefined,
  state: string | undefined,
  updatedAt: string | undefined,
  result: string | undefined,
): LedgerEntry {
  if (state === undefined || !STATES.has(state)) throw unexpected([argsHash, state, updatedAt]);
  return {
    key,
    argsHash: argsHash ?? "",
    state: state as LedgerState,
    updatedAt: Number(updatedAt),
    ...(result !== undefined && result !== "" && { result: JSON.parse(result) as unknown }),
  };
}

/** A script's or HMGET's reply as strings; nil becomes "". */
function strings(reply: unknown): (string | undefined)[] {
  if (!Array.isArray(reply)) throw unexpected(reply);
  return reply.map((item: unknown) => (item === null ? "" : String(item)));
}

function unexpected(reply: unknown): GovernorError {
  return new GovernorError(
    "store_error",
    `RedisStore: unexpected reply ${JSON.stringify(reply)}; is another program writing under this prefix?`,
  );
}

function invalid(message: string): GovernorError {
  return new GovernorError("invalid_options", `createRedisStore: ${message}.`);
}

function positive(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalid(`${name} must be a positive finite number of ms, got ${String(value)}`);
  }
  return value;
}

/** The URL without its password, for error messages. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the Redis URL";
  }
}
