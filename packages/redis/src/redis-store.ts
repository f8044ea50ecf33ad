import { randomUUID } from "node:crypto";
import type {
  AddOutcomeOptions,
  ClaimOptions,
  ClaimResult,
  LedgerEntry,
  LedgerState,
  OutcomeRecord,
  SettleOptions,
  Store,
} from "@governor/core";
import { checkAddOutcome, GovernorError, StoreError, settleHoldMs } from "@governor/core";
import { createClient } from "redis";
import { type Bucket, type Layout, layout, MAX_BUCKETS, shareOf } from "./layout.ts";
import {
  ACKNOWLEDGE,
  ADD_OUTCOME,
  CLAIM,
  ENTRY,
  INCREMENT,
  LIST_OUTCOMES,
  RESET_OUTCOMES,
  type Script,
  SETTLE,
} from "./scripts.ts";
import {
  ConnectionChanged,
  isSentinel,
  type RedisStoreSentinel,
  sentinelProblem,
  sentinelTransport,
} from "./sentinel.ts";
import { checkServer, type RedisStoreWarning } from "./server-checks.ts";
import { CommandTimeout, NoConnection, toStoreError } from "./store-errors.ts";
import {
  clusterTransport,
  isCluster,
  type RedisStoreClient,
  type RedisStoreCluster,
  type Send,
  singleTransport,
  type Transport,
} from "./transport.ts";

export type { RedisStoreSentinel } from "./sentinel.ts";
export type { RedisStoreClient, RedisStoreCluster } from "./transport.ts";

/** Options of {@link createRedisStore}: give a `client` or a `url`. */
export interface RedisStoreOptions {
  /**
   * A connected node-redis client (`createClient()`), a connected cluster client
   * (`createCluster()`, for Redis Cluster or Valkey Cluster), or a connected Sentinel client
   * (`createSentinel()`, with its default `masterPoolSize` of 1 or `reserveClient: true`). The
   * store only sends commands with it; `close()` leaves it open. Use this for a cluster, Sentinel,
   * TLS, auth, or your own reconnect and offline-queue settings.
   * @default none: a client is created from `url`
   */
  readonly client?: RedisStoreClient | RedisStoreCluster | RedisStoreSentinel;
  /**
   * `redis[s]://[[user][:password]@]host[:port][/db]`. The store creates, connects and owns a client
   * (closed by `close()`) that fails commands at once while disconnected rather than queueing
   * them, so a lost server turns into errors, never into calls that hang.
   * @default none: `client` is used
   */
  readonly url?: string;
  /**
   * Prepended to every Redis key (see the README for the layout). On a cluster it must not hold
   * a hash tag (`{…}`): the store tags each bucket of the ledger itself, and a tag in the prefix
   * would put every key in one slot.
   * @default "governor:"
   */
  readonly prefix?: string;
  /**
   * How many buckets the ledger is split into. A ledger entry, its result and its bucket's
   * indexes share one hash tag (one cluster slot), and the buckets' tags are spread over the
   * slot range, so a cluster's primaries share the ledger. `maxUnsettled` and `maxOutcomes` are
   * kept per bucket (each holds its share, rounded up). Every worker on a prefix must use the same
   * count: the first one records it under the prefix and a store given another is refused.
   * @default 1 with a single server (the key names of earlier versions); 16 with a cluster client
   */
  readonly buckets?: number;
  /**
   * How long settled (`succeeded` / `failed`) ledger entries are kept, in ms.
   * @default 86_400_000 (24 h)
   */
  readonly retentionMs?: number;
  /**
   * Hard cap on unsettled (`pending` / `uncertain`) ledger entries under this prefix. When it is
   * reached, claims of new keys answer `ledger_full` (fail-closed). With several `buckets` each
   * bucket holds at most its share (`ceil(maxUnsettled / buckets)`): a claim answers
   * `ledger_full` when its own bucket is full, so the whole may refuse a little below the cap.
   * @default 10_000
   */
  readonly maxUnsettled?: number;
  /**
   * Most learned records (`addOutcome`) kept under this prefix; past it the least recently updated
   * go. Each record also expires `ttlMs` after its last addition.
   * @default 10_000
   */
  readonly maxOutcomes?: number;
  /**
   * How long a command waits for the owned client's first connection (or a reconnection), in ms.
   * @default 5_000
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long one command may take, in ms, on the owned client and on a client passed in alike
   * (at most 2^31 - 1, what a timer holds; a longer one is taken as that).
   * Past it the operation fails with a `StoreError` (`timeout`): a stalled server never holds a
   * call. A claim that timed out may still have been taken on the server: its entry then stays
   * `pending` and becomes `uncertain` after the lease, never free.
   * @default 2_000
   */
  readonly commandTimeoutMs?: number;
  /**
   * Refuse a server without AOF persistence (`appendonly yes`, `appendfsync everysec` or
   * `always`). Checked before the first command on each connection. With `false` the store uses
   * such a server and reports it through `onWarning`: a restart then forgets the ledger (the
   * epoch check refuses claims afterwards, for workers that saw the ledger before).
   * @default true
   */
  readonly requirePersistence?: boolean;
  /**
   * Refuse a server whose `maxmemory-policy` is not `noeviction`. With `false` the store uses it
   * and reports it through `onWarning`. Under a `volatile-*` policy only keys with an expiry can
   * go (replay results, values, counters), never ledger entries; under `allkeys-*` anything can.
   * @default true
   */
  readonly requireNoEviction?: boolean;
  /**
   * After each claim and settle, wait (`WAIT`, on the primary that took the write) until this
   * many replicas have the write, at most half of `commandTimeoutMs`; fewer is a `StoreError`
   * (`unavailable`) and the claim is refused. Makes a failover to a replica keep every claim the
   * store answered. With 0 a failover can lose the last claims and settles: a worker that saw one
   * of them is refused from then on (`ledger_lost`), but a worker that saw none can claim such a
   * key again and run its write a second time.
   * @default 1 when the ledger's primary has had a replica (recorded in the ledger's epoch by
   * every claim and settle, kept across restarts of the primary, cleared only when a replica is
   * promoted), 0 on one that never had one. To drop the replicas for good, pass 0, or delete the
   * epoch's `replicated` field once they are gone (see docs/stores.md)
   */
  readonly waitForReplicas?: number;
  /**
   * Receives the owned client's connection errors (it reconnects on its own; commands sent
   * meanwhile fail with a `StoreError`). node-redis requires a listener, so the default exists.
   * @default ignore them
   */
  readonly onError?: (error: Error) => void;
  /**
   * Receives what the server checks found unsafe but were told to accept
   * (`requirePersistence: false`, `requireNoEviction: false`), or could not check.
   * @default ignore them
   */
  readonly onWarning?: (warning: RedisStoreWarning) => void;
}

/** A {@link Store} on a Redis server: every method answers with a promise. */
export interface RedisStore extends Store {
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs?: number): Promise<void>;
  increment(key: string, by: number, ttlMs: number): Promise<number>;
  /**
   * Claims a key (see `Store.claim`). Rejects with a `StoreError` whose `reason` is
   * `ledger_lost` when the ledger lost data: nothing may execute until a person acknowledges it.
   */
  claim(key: string, argsHash: string, options: ClaimOptions): Promise<ClaimResult>;
  settle(
    key: string,
    state: Exclude<LedgerState, "pending">,
    options: SettleOptions,
  ): Promise<void>;
  entry(key: string): Promise<LedgerEntry | undefined>;
  addOutcome(key: string, field: string, options: AddOutcomeOptions): Promise<OutcomeRecord>;
  outcome(key: string): Promise<OutcomeRecord | undefined>;
  listOutcomes(limit: number): Promise<OutcomeRecord[]>;
  resetOutcomes(prefix?: string): Promise<number>;
  /**
   * Clears the mark of a ledger that lost data, after a person checked the writes that were in
   * doubt (the keys the lost ledger held as `pending` or `uncertain`, from your logs or the
   * events). A new epoch starts; every worker on this prefix takes claims again.
   */
  acknowledgeLedgerLoss(): Promise<void>;
  /**
   * Closes the client the store created from `url` (its QUIT waits at most `commandTimeoutMs`, then
   * the socket is dropped); does nothing to a client passed in.
   */
  close(): Promise<void>;
}

const STATUSES = new Set(["claimed", "in_flight", "args_mismatch", "succeeded", "uncertain"]);
const STATES = new Set<string>(["pending", "succeeded", "failed", "uncertain"]);
const LOSSES: Readonly<Record<string, string>> = {
  missing:
    "the ledger's epoch key is gone (a restart without persistence, FLUSHALL, or an eviction)",
  replaced: "the ledger was created afresh since this worker last used it (its data was lost)",
  rolled_back:
    "the ledger went back in time (a failover to a replica that had not received the latest writes)",
};

/**
 * A {@link Store} shared by many workers on many machines through one Redis server: claims and
 * settles are Lua scripts, so two workers can never both claim one key; counters are INCRBY with
 * the expiry set in the same script. Ledger entries never have a Redis expiry (settled ones are
 * dropped by the scripts once their retention has passed), big replay results live in keys of
 * their own, and an epoch detects a ledger that lost its data. Before the first command on a
 * connection the store checks the server: AOF persistence and `noeviction` (see the options).
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
  const maxOutcomes = options.maxOutcomes ?? 10_000;
  if (!Number.isSafeInteger(maxOutcomes) || maxOutcomes < 1) {
    throw invalid(`maxOutcomes must be a positive integer, got ${String(maxOutcomes)}`);
  }
  const waitForReplicas = options.waitForReplicas;
  if (
    waitForReplicas !== undefined &&
    (!Number.isSafeInteger(waitForReplicas) || waitForReplicas < 0)
  ) {
    throw invalid(`waitForReplicas must be a whole number >= 0, got ${String(waitForReplicas)}`);
  }
  // A timer holds at most 2^31 - 1 ms (24.8 days): Node fires a longer one after 1 ms.
  const connectTimeoutMs = Math.min(
    MAX_TIMER_MS,
    positive("connectTimeoutMs", options.connectTimeoutMs ?? 5_000),
  );
  const commandTimeoutMs = Math.min(
    MAX_TIMER_MS,
    Math.ceil(positive("commandTimeoutMs", options.commandTimeoutMs ?? 2_000)),
  );
  if ((options.client === undefined) === (options.url === undefined)) {
    throw invalid(
      "give exactly one of client (a connected node-redis client, cluster client or Sentinel client) or url",
    );
  }
  const onCluster = isCluster(options.client);
  const onSentinel = isSentinel(options.client);
  const unusable = onSentinel ? sentinelProblem(options.client as RedisStoreSentinel) : undefined;
  if (unusable !== undefined) throw invalid(unusable);
  const bucketCount = options.buckets ?? (onCluster ? 16 : 1);
  if (!Number.isSafeInteger(bucketCount) || bucketCount < 1 || bucketCount > MAX_BUCKETS) {
    throw invalid(
      `buckets must be a whole number from 1 to ${MAX_BUCKETS}, got ${String(bucketCount)}`,
    );
  }
  if (onCluster && /[{}]/.test(prefix)) {
    throw invalid(
      `prefix must not hold a hash tag on a cluster (the store tags each bucket itself; a tag in the prefix would put every key in one slot), got ${JSON.stringify(prefix)}`,
    );
  }
  for (const name of ["onError", "onWarning"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") {
      throw invalid(`${name} must be a function, got ${typeof options[name]}`);
    }
  }
  const requirements = {
    requirePersistence: options.requirePersistence ?? true,
    requireNoEviction: options.requireNoEviction ?? true,
    onWarning: options.onWarning ?? (() => {}),
  };

  const owned = options.client === undefined ? own(options.url as string) : undefined;
  const transport: Transport = onCluster
    ? clusterTransport(options.client as RedisStoreCluster)
    : onSentinel
      ? sentinelTransport(options.client as RedisStoreSentinel)
      : singleTransport(
          (options.client as RedisStoreClient | undefined) ?? (owned as Owned).client,
        );
  const keys: Layout = layout(prefix, bucketCount, onCluster || bucketCount > 1);
  const unsettledShare = shareOf(maxUnsettled, bucketCount);
  const outcomesShare = shareOf(maxOutcomes, bucketCount);
  const ledgerKeys = (bucket: Bucket, key: string) => [
    `${bucket.prefix}l:${key}`,
    `${bucket.prefix}r:${key}`,
    bucket.unsettled,
    bucket.settled,
    bucket.epoch,
  ];
  const outcomeKey = (key: string) => `${keys.bucketOf(key).prefix}o:${key}`;
  /** Per bucket, the epoch this store has seen: its id, and the highest number and its primary. */
  const epochs = keys.buckets.map(() => ({ id: "", seq: 0, primary: "" }));
  /** The server checks of the current connection (or set of primaries), once passed. */
  let checked: Promise<void> | undefined;
  let checkedPrimaries = "";
  let connections = 0;
  owned?.onReady(() => {
    // A reconnection may reach another server (a failover): check it again.
    connections += 1;
    if (connections > 1) checked = undefined;
  });

  /**
   * Sends one command, bounded by `commandTimeoutMs`, without the server checks; `via` a session
   * (`transport.session()`) when it must share a connection with the commands before it.
   */
  async function sendRaw(route: string | undefined, args: string[], via?: Send): Promise<unknown> {
    if (owned !== undefined) await owned.whenReady();
    return await within((via ?? transport.send)(route, args, commandTimeoutMs), commandTimeoutMs);
  }

  /**
   * The checks at connect, on every primary (again when a cluster's primaries change), then the
   * bucket count recorded under the prefix.
   */
  async function checkAll(): Promise<void> {
    await Promise.all(
      transport
        .primaries()
        .map((sendTo) =>
          checkServer(
            (args) =>
              within(
                owned === undefined ? sendTo(args, commandTimeoutMs) : sendRaw(undefined, args),
                commandTimeoutMs,
              ),
            requirements,
          ),
        ),
    );
    await sendRaw(keys.layoutKey, ["SET", keys.layoutKey, String(bucketCount), "NX"]);
    const recorded = await sendRaw(keys.layoutKey, ["GET", keys.layoutKey]);
    if (String(recorded) !== String(bucketCount)) {
      throw new StoreError({
        reason: "misconfigured",
        operation: "connect",
        message: `RedisStore: the ledger under this prefix has ${String(recorded)} buckets and this store was given ${bucketCount}; every worker on a prefix must use the same buckets (another count would put one key in two places).`,
      });
    }
  }

  async function send(route: string | undefined, args: string[], via?: Send): Promise<unknown> {
    for (let tries = 1; ; tries++) {
      // A cluster's primaries changed, or a Sentinel client's connection (see sentinel.ts).
      const now = transport.primariesId();
      if (now !== checkedPrimaries) {
        checkedPrimaries = now;
        checked = undefined;
      }
      if (checked === undefined) {
        const check = checkAll();
        checked = check;
        // A failed check is not kept: the next operation checks again (the server may be fixed).
        check.catch(() => {
          if (checked === check) checked = undefined;
        });
      }
      try {
        await checked;
        return await sendRaw(route, args, via);
      } catch (error) {
        // Handed to a connection the checks had not seen, and not sent (see sentinel.ts): check
        // that one, and send once more.
        if (!(error instanceof ConnectionChanged) || error.sent || tries > 1) throw error;
      }
    }
  }

  async function run(
    script: Script,
    scriptKeys: string[],
    args: string[],
    via?: Send,
  ): Promise<unknown> {
    const rest = [String(scriptKeys.length), ...scriptKeys, ...args];
    const route = scriptKeys[0];
    try {
      return await send(route, ["EVALSHA", script.sha1, ...rest], via);
    } catch (error) {
      // A restarted or flushed server forgot the script: EVAL sends it and caches it again.
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return await send(route, ["EVAL", script.source, ...rest], via);
    }
  }

  /**
   * Runs a ledger script on the key's bucket: the epoch arguments first, then the script's own.
   * Answers the reply after the epoch fields (status first), and waits for the replicas when
   * the script wrote.
   */
  async function ledger(
    operation: string,
    script: Script,
    key: string,
    args: string[],
    writes: boolean,
  ): Promise<string[]> {
    const bucket = keys.bucketOf(key);
    const epoch = epochs[bucket.index] as { id: string; seq: number; primary: string };
    // The script and its WAIT on one connection: WAIT answers for its own connection's writes.
    const via = transport.session();
    const reply = strings(
      await run(
        script,
        ledgerKeys(bucket, key),
        [
          epoch.id,
          String(epoch.seq),
          epoch.primary,
          randomUUID(),
          `${bucket.prefix}l:`,
          `${bucket.prefix}r:`,
          ...args,
        ],
        via,
      ),
    );
    if (reply[0] === "ledger_lost") throw lost(operation, reply[1]);
    const [status, id, seq, primary, replicated, ...rest] = reply;
    if (id !== undefined && id !== "") {
      const n = Number(seq);
      // The highest number seen and the primary that answered it: replies of one bucket may come
      // from two primaries around a failover, in any order.
      if (id !== epoch.id || n > epoch.seq) {
        epoch.id = id;
        epoch.seq = n;
        epoch.primary = primary ?? "";
      }
    }
    if (writes && status !== "ledger_full") await replicate(bucket, replicated === "1", via);
    return [status ?? "", ...rest];
  }

  /**
   * Waits until `waitForReplicas` replicas (by default 1 when the bucket's ledger has had one
   * since its primary was last promoted: see scripts.ts) have this connection's writes: WAIT goes
   * to the primary of the bucket, on the connection that wrote. A reply that is not a count
   * (a proxy or a fake answering something else) refuses the claim: nothing confirmed it.
   */
  async function replicate(bucket: Bucket, hasReplica: boolean, via: Send): Promise<void> {
    const wanted = waitForReplicas ?? (hasReplica ? 1 : 0);
    if (wanted === 0) return;
    // Half the command timeout, so that WAIT answers before the command times out.
    const waitMs = Math.max(1, Math.floor(commandTimeoutMs / 2));
    const acked = Number(await send(bucket.epoch, ["WAIT", String(wanted), String(waitMs)], via));
    if (!(acked >= wanted)) {
      throw new StoreError({
        reason: "unavailable",
        operation: "replicate",
        message: Number.isNaN(acked)
          ? `RedisStore: WAIT answered no count of replicas, so none of the ${wanted} wanted is known to have the write.`
          : `RedisStore: only ${acked} of ${wanted} replicas confirmed the write within ${waitMs} ms.`,
      });
    }
  }

  /** Runs one operation, turning any failure into a redacted `StoreError` (store-errors.ts). */
  async function attempt<T>(operation: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (error) {
      throw toStoreError(operation, error);
    }
  }

  return {
    get<T>(key: string): Promise<T | undefined> {
      return attempt("get", async () => {
        const valueKey = keys.valueKey(key);
        const reply = await send(valueKey, ["GET", valueKey]);
        return reply === null ? undefined : (JSON.parse(String(reply)) as T);
      });
    },

    set<T>(key: string, value: T, ttlMs?: number): Promise<void> {
      let json: string | undefined;
      try {
        json = JSON.stringify(value) as string | undefined;
      } catch (error) {
        // The value's own fault (a BigInt, a cycle), not the store's: JSON's error as it is, as
        // the memory store throws it, never a store error saying Redis is down.
        return Promise.reject(error);
      }
      return attempt("set", async () => {
        const valueKey = keys.valueKey(key);
        if (json === undefined) {
          await send(valueKey, ["DEL", valueKey]);
        } else if (ttlMs === undefined) {
          await send(valueKey, ["SET", valueKey, json]);
        } else {
          const px = String(Math.ceil(positive("ttlMs", ttlMs)));
          await send(valueKey, ["SET", valueKey, json, "PX", px]);
        }
      });
    },

    increment(key: string, by: number, ttlMs: number): Promise<number> {
      return attempt("increment", async () => {
        if (!Number.isSafeInteger(by)) {
          throw invalid(`increment: by must be a safe integer, got ${String(by)}`);
        }
        const px = String(Math.ceil(positive("ttlMs", ttlMs)));
        return Number(await run(INCREMENT, [keys.valueKey(key)], [String(by), px]));
      });
    },

    claim(key: string, argsHash: string, claim: ClaimOptions): Promise<ClaimResult> {
      return attempt("claim", async () => {
        const reply = await ledger(
          "claim",
          CLAIM,
          key,
          [
            argsHash,
            String(claim.now),
            claim.allowUncertain ? "1" : "0",
            String(claim.leaseMs),
            String(unsettledShare),
            key,
            claim.handedOver === undefined ? "" : String(claim.handedOver),
          ],
          true,
        );
        const [status, hash, state, updatedAt, result, unavailable, retaken, claimedAt] = reply;
        if (status === "ledger_full") return { status };
        if (status === undefined || !STATUSES.has(status)) throw unexpected();
        const entry = toEntry(key, hash, state, updatedAt, result, unavailable);
        if (status !== "claimed") return { status, entry } as ClaimResult;
        const mark = Number(claimedAt);
        if (claimedAt === undefined || claimedAt === "" || !Number.isSafeInteger(mark)) {
          throw unexpected();
        }
        if (retaken === "1") return { status, entry, claimedAt: mark, retaken: true };
        return { status, entry, claimedAt: mark };
      });
    },

    settle(
      key: string,
      state: Exclude<LedgerState, "pending">,
      settlement: SettleOptions,
    ): Promise<void> {
      let result: string;
      let expected = "";
      try {
        result = blobText(settlement.result);
        // The result a conditional settle expects (`SettleOptions.ifSucceeded`, see SETTLE).
        const { ifSucceeded } = settlement;
        if (ifSucceeded !== undefined) {
          const text = blobText(ifSucceeded.result);
          expected = text === "" ? "-" : `=${text}`;
        }
      } catch (error) {
        // As in `set`: a result JSON cannot write is the caller's (the core settles without it).
        return Promise.reject(error);
      }
      return attempt("settle", async () => {
        await ledger(
          "settle",
          SETTLE,
          key,
          [
            state,
            String(settlement.now),
            result,
            String(retentionMs),
            key,
            settlement.claimedAt === undefined ? "" : String(settlement.claimedAt),
            expected,
            holdText(settleHoldMs(state, settlement)),
          ],
          true,
        );
      });
    },

    entry(key: string): Promise<LedgerEntry | undefined> {
      return attempt("entry", async () => {
        const reply = await ledger("entry", ENTRY, key, [], false);
        const [status, hash, state, updatedAt, result, unavailable, leaseMs, leaseLeft, claim] =
          reply;
        if (status === "absent") return undefined;
        if (status !== "found") throw unexpected();
        const found = toEntry(key, hash, state, updatedAt, result, unavailable, leaseMs, leaseLeft);
        const claimedAt = claim === undefined || claim === "" ? Number.NaN : Number(claim);
        // A pending entry names its latest claim: its mark by the server's clock, or the claimer's
        // `now` when an earlier version claimed it (as SETTLE names that claim).
        return found.state === "pending" && Number.isFinite(claimedAt)
          ? { ...found, claimedAt }
          : found;
      });
    },

    addOutcome(key: string, field: string, add: AddOutcomeOptions): Promise<OutcomeRecord> {
      return attempt("addOutcome", async () => {
        const { by, now, halfLifeMs, ttlMs } = checkAddOutcome(field, add);
        const bucket = keys.bucketOf(key);
        const reply = await run(
          ADD_OUTCOME,
          [outcomeKey(key), bucket.outcomes],
          [
            field,
            String(by),
            String(now),
            String(halfLifeMs),
            String(ttlMs),
            String(outcomesShare),
            key,
            `${bucket.prefix}o:`,
          ],
        );
        return toOutcome(key, strings(reply));
      });
    },

    outcome(key: string): Promise<OutcomeRecord | undefined> {
      return attempt("outcome", async () => {
        const record = outcomeKey(key);
        const flat = strings(await send(record, ["HGETALL", record]));
        return flat.length === 0 ? undefined : toOutcome(key, flat);
      });
    },

    listOutcomes(limit: number): Promise<OutcomeRecord[]> {
      return attempt("listOutcomes", async () => {
        if (!Number.isSafeInteger(limit) || limit < 1) {
          throw invalid(`listOutcomes: limit must be a positive integer, got ${String(limit)}`);
        }
        // Each bucket's newest `limit`, merged: the newest `limit` of all are among them.
        const lists = await Promise.all(
          keys.buckets.map(async (bucket) => {
            const reply = await run(
              LIST_OUTCOMES,
              [bucket.outcomes],
              [String(limit), `${bucket.prefix}o:`],
            );
            if (!Array.isArray(reply)) throw unexpected();
            return reply.map((item: unknown) => {
              const [key, ...flat] = strings(item);
              if (key === undefined) throw unexpected();
              return toOutcome(key, flat);
            });
          }),
        );
        if (lists.length === 1) return lists[0] as OutcomeRecord[];
        return lists
          .flat()
          .sort((a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? 1 : a.key > b.key ? -1 : 0))
          .slice(0, limit);
      });
    },

    resetOutcomes(match?: string): Promise<number> {
      return attempt("resetOutcomes", async () => {
        if (match !== undefined && typeof match !== "string") {
          throw invalid(`resetOutcomes: prefix must be a string, got ${typeof match}`);
        }
        const counts = await Promise.all(
          keys.buckets.map(async (bucket) =>
            Number(
              await run(RESET_OUTCOMES, [bucket.outcomes], [match ?? "", `${bucket.prefix}o:`]),
            ),
          ),
        );
        return counts.reduce((sum, n) => sum + n, 0);
      });
    },

    acknowledgeLedgerLoss(): Promise<void> {
      return attempt("acknowledgeLedgerLoss", async () => {
        await Promise.all(
          keys.buckets.map((bucket) => run(ACKNOWLEDGE, [bucket.epoch], [randomUUID()])),
        );
      });
    },

    async close(): Promise<void> {
      await owned?.close();
    },
  };

  function own(url: string): Owned {
    const client = createClient({
      url,
      disableOfflineQueue: true,
      socket: { connectTimeout: connectTimeoutMs },
      commandOptions: { timeout: commandTimeoutMs },
    });
    const onError = options.onError ?? (() => {});
    client.on("error", onError);
    let closed = false;
    let waiting: Promise<void> | undefined;
    // Connecting is retried by the client itself; commands wait for it (see whenReady).
    const connecting = client.connect().then(
      () => {},
      () => {},
    );
    return {
      client,
      onReady(listener: () => void): void {
        client.on("ready", listener);
      },
      whenReady(): Promise<void> {
        if (client.isReady) return Promise.resolve();
        if (closed) {
          return Promise.reject(
            new StoreError({
              reason: "unavailable",
              operation: "send",
              message: "RedisStore: the store was closed.",
            }),
          );
        }
        waiting ??= new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => {
            client.off("ready", ready);
            waiting = undefined;
            reject(new NoConnection(connectTimeoutMs));
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
        if (!client.isReady) {
          // node-redis 5 loses a destroy() made while the socket is still connecting: the socket
          // connects all the same and holds the process open (a store created and closed at once,
          // as in a short script). Wait for that first attempt (an error ends it too), within the
          // connect timeout, then close what it left.
          await within(Promise.race([connecting, once(client, "error")]), connectTimeoutMs).catch(
            () => {},
          );
          if (!client.isReady) {
            destroyQuietly(client);
            return;
          }
        }
        // QUIT waits for the server's answer: a stalled server (CLIENT PAUSE, a long script) or
        // one gone before the socket noticed would keep close() waiting, for ever when nothing
        // ends the socket. Past the command timeout the socket is dropped instead.
        try {
          await within(client.close(), commandTimeoutMs);
        } catch {
          destroyQuietly(client);
        }
      },
    };
  }
}

/** `work`, or a {@link CommandTimeout} once `ms` pass first (the timer cleared either way). */
async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CommandTimeout(ms)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The next `event` of `emitter` (its listener removed once it fired). */
function once(emitter: { once(event: string, listener: () => void): unknown }, event: string) {
  return new Promise<void>((resolve) => emitter.once(event, () => resolve()));
}

/** Drops the socket of a client whose QUIT got no answer (it may be closing already). */
function destroyQuietly(client: { destroy(): void }): void {
  try {
    client.destroy();
  } catch {
    // Already closed: nothing left to drop.
  }
}

/** A client the store created from a URL, and so connects and closes. */
interface Owned {
  readonly client: RedisStoreClient;
  onReady(listener: () => void): void;
  whenReady(): Promise<void>;
  close(): Promise<void>;
}

function toEntry(
  key: string,
  argsHash: string | undefined,
  state: string | undefined,
  updatedAt: string | undefined,
  result: string | undefined,
  unavailable: string | undefined,
  leaseMs?: string,
  leaseLeft?: string,
): LedgerEntry {
  if (state === undefined || !STATES.has(state)) throw unexpected();
  const lease = Number(leaseMs);
  const left = leaseLeft === undefined || leaseLeft === "" ? Number.NaN : Number(leaseLeft);
  return {
    key,
    argsHash: argsHash ?? "",
    state: state as LedgerState,
    updatedAt: Number(updatedAt),
    ...(result !== undefined && result !== "" && { result: JSON.parse(result) as unknown }),
    ...(unavailable === "1" && { resultUnavailable: true as const }),
    ...(state === "pending" && Number.isSafeInteger(lease) && lease > 0 && { leaseMs: lease }),
    // The lease left by the server's clock, which the claims count (not the claimer's).
    ...(state === "pending" &&
      Number.isSafeInteger(lease) &&
      lease > 0 &&
      Number.isSafeInteger(left) && { leaseLeftMs: left }),
  };
}

/** An outcome record from its hash's flat field list (`@t` is its time). */
function toOutcome(key: string, flat: readonly string[]): OutcomeRecord {
  const counts: Record<string, number> = {};
  let updatedAt: number | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const value = Number(flat[i + 1]);
    if (!Number.isFinite(value)) throw unexpected();
    if (flat[i] === "@t") updatedAt = value;
    else counts[flat[i] as string] = value;
  }
  if (updatedAt === undefined) throw unexpected();
  return { key, counts, updatedAt };
}

/** A script's reply as strings; nil becomes "". */
function strings(reply: unknown): string[] {
  if (!Array.isArray(reply)) throw unexpected();
  return reply.map((item: unknown) => (item === null ? "" : String(item)));
}

function lost(operation: string, reason: string | undefined): StoreError {
  const what = LOSSES[reason ?? ""] ?? "the ledger lost data";
  return new StoreError({
    reason: "ledger_lost",
    operation,
    message: `RedisStore: ${what}; a write in doubt could run again, so no claim is answered until a person checks the writes that were pending or uncertain and calls acknowledgeLedgerLoss().`,
  });
}

function unexpected(): StoreError {
  return new StoreError({
    reason: "rejected",
    operation: "read",
    message:
      "RedisStore: unexpected reply from Redis; is another program writing under this prefix?",
  });
}

function invalid(message: string): GovernorError {
  return new GovernorError("invalid_options", `createRedisStore: ${message}.`);
}

/** The longest delay a Node timer keeps. */
const MAX_TIMER_MS = 2_147_483_647;

function positive(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalid(`${name} must be a positive finite number of ms, got ${String(value)}`);
  }
  return value;
}

/** A result as SETTLE writes its blob: JSON text, or "" for none. */
function blobText(value: unknown): string {
  return value === undefined ? "" : ((JSON.stringify(value) as string | undefined) ?? "");
}

/** A hold for SETTLE (`settleHoldMs`): whole ms, "" for none. */
function holdText(held: number): string {
  return held > 0 ? String(held) : "";
}
