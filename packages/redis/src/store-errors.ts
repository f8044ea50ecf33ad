import { GovernorError, StoreError, type StoreErrorReason } from "@governor/core";
import { ErrorReply, TimeoutError } from "redis";

/** Thrown by the store's own timer when a command outlives `commandTimeoutMs`. */
export class CommandTimeout extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "CommandTimeout";
  }
}

/** Thrown while waiting for the owned client's connection. */
export class NoConnection extends Error {
  constructor(readonly ms: number) {
    super(`no connection within ${ms} ms`);
    this.name = "NoConnection";
  }
}

/** What a known Redis error reply means, in words that carry nothing of the deployment. */
const REPLIES: Readonly<Record<string, string>> = {
  OOM: "Redis is out of memory (maxmemory reached under noeviction): free memory or raise maxmemory",
  READONLY: "Redis is a read-only replica (a failover in progress?)",
  MASTERDOWN: "Redis lost its primary (a failover in progress?)",
  LOADING: "Redis is still loading its data",
  BUSY: "Redis is busy running a script",
  NOREPLICAS: "Redis has too few replicas to accept writes (min-replicas-to-write)",
  NOPERM: "the Redis user lacks a permission the store needs",
  NOAUTH: "Redis asks for authentication",
  WRONGPASS: "Redis refused the credentials",
  WRONGTYPE: "a key under the store's prefix holds another type of value",
  CLUSTERDOWN: "the Redis cluster is down",
  MOVED:
    "the key lives on another cluster node (on a cluster, pass a cluster client from createCluster())",
  ASK: "the key is moving between cluster nodes",
  CROSSSLOT:
    "a script's keys are in different cluster slots (on a cluster, pass a cluster client from createCluster(): the store then tags each bucket's keys)",
  NOSCRIPT: "Redis does not know the store's script",
};

/**
 * Turns any failure of a store operation into a {@link StoreError} whose message names the
 * operation and a fixed reason: never the URL, a host, an address, a user or a key (those stay in
 * `cause`, for the host's logs). A GovernorError (bad input, a StoreError already) passes through.
 */
export function toStoreError(operation: string, error: unknown): GovernorError {
  if (GovernorError.isInstance(error)) return error;
  const [reason, detail] = describe(error);
  return new StoreError({
    reason,
    operation,
    message: `RedisStore: ${operation} failed: ${detail}.`,
    cause: error,
  });
}

const REPLY_CLASSES = new Set(["ErrorReply", "SimpleError", "BlobError"]);

function describe(error: unknown): [StoreErrorReason, string] {
  if (error instanceof CommandTimeout) {
    return ["timeout", `Redis did not answer within ${error.ms} ms`];
  }
  if (error instanceof NoConnection) {
    return ["unavailable", `no connection to Redis within ${error.ms} ms`];
  }
  if (!(error instanceof Error)) return ["unavailable", "the Redis client failed"];
  // node-redis: TimeoutError (its own command timeout), ErrorReply (the server answered an error),
  // ClientClosedError, ClientOfflineError, SocketClosedUnexpectedlyError, socket errors.
  // A borrowed client may come from another copy of node-redis: match its class names too.
  const kind = error.constructor.name;
  if (error instanceof TimeoutError || kind === "TimeoutError") {
    return ["timeout", "Redis did not answer in time"];
  }
  if (error instanceof ErrorReply || REPLY_CLASSES.has(kind)) {
    const code = /^[A-Z]+/.exec(error.message)?.[0] ?? "ERR";
    if (code === "ERR" && /not an integer/i.test(error.message)) {
      return ["rejected", "the value is not an integer counter; use another key for counters"];
    }
    return ["rejected", REPLIES[code] ?? `Redis answered with an error (${code})`];
  }
  return ["unavailable", "the connection to Redis is down or broke during the command"];
}
