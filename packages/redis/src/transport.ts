import type { RedisClientType } from "redis";

/** What the store needs of a node-redis client: any `createClient()` result fits. */
export type RedisStoreClient = Pick<RedisClientType, "sendCommand">;

/** What the store needs of a node-redis cluster client: any `createCluster()` result fits. */
export interface RedisStoreCluster {
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
    options?: { timeout?: number },
  ): Promise<unknown>;
  readonly masters: readonly { readonly address: string }[];
  // biome-ignore lint/suspicious/noExplicitAny: node-redis types its node by the cluster's own generics
  nodeClient(node: any): Promise<{ sendCommand(args: string[]): Promise<unknown> }>;
}

/** Sends one command; `route` is a key whose slot picks the primary on a cluster. */
export type Send = (
  route: string | undefined,
  args: string[],
  timeoutMs: number,
) => Promise<unknown>;

/** How commands reach Redis: one server, or a cluster's primaries. */
export interface Transport {
  readonly cluster: boolean;
  readonly send: Send;
  /**
   * A `Send` whose commands all go over one connection, or fail: a `WAIT` answers only for the
   * writes of its own connection, so it must follow a script on the connection that ran it.
   */
  session(): Send;
  /** A name for the set of primaries: it changes when a failover or a resharding changes them. */
  primariesId(): string;
  /** Each primary, as a function sending a command to it. */
  primaries(): PrimarySend[];
}

/** Sends one command to one primary (`timeoutMs`: what the store waits at most). */
export type PrimarySend = (args: string[], timeoutMs?: number) => Promise<unknown>;

/** Whether `client` is a node-redis cluster client (it has `masters` and `nodeClient`). */
export function isCluster(client: unknown): client is RedisStoreCluster {
  return (
    typeof client === "object" &&
    client !== null &&
    "masters" in client &&
    typeof (client as { nodeClient?: unknown }).nodeClient === "function"
  );
}

/** A transport over one client (one server, or an address that always reaches the primary). */
export function singleTransport(client: RedisStoreClient): Transport {
  const sendOne = (args: string[], timeoutMs?: number) =>
    client.sendCommand(args, timeoutMs === undefined ? undefined : { timeout: timeoutMs });
  return {
    cluster: false,
    send: (_route, args, timeoutMs) => sendOne(args, timeoutMs),
    // One client is one connection: a reconnection between a script and its WAIT is not seen.
    session: () => (_route, args, timeoutMs) => sendOne(args, timeoutMs),
    primariesId: () => "single",
    primaries: () => [(args) => sendOne(args)],
  };
}

/**
 * A transport over a cluster client: a command goes to the primary of its route key's slot (the
 * client follows MOVED and ASK itself), and the checks at connect reach every primary.
 */
export function clusterTransport(cluster: RedisStoreCluster): Transport {
  const send: Send = (route, args, timeoutMs) =>
    cluster.sendCommand(route, false, args, { timeout: timeoutMs });
  return {
    cluster: true,
    send,
    // Each node's client is one connection: a script and its WAIT (same route) share it.
    session: () => send,
    primariesId: () => cluster.masters.map((master) => master.address).join(","),
    primaries: () =>
      cluster.masters.map(
        (master): PrimarySend =>
          async (args) =>
            (await cluster.nodeClient(master)).sendCommand(args),
      ),
  };
}
