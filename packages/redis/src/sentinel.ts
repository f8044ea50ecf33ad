import { StoreError } from "@governor/core";
import { CommandTimeout } from "./store-errors.ts";
import type { Send, Transport } from "./transport.ts";

/**
 * What the store needs of a node-redis Sentinel client: any connected `createSentinel()` result
 * (node-redis 5) fits. The store runs each command through `_execute`, which hands it the client
 * connected to the current primary (the public `sendCommand` would send a command again on the
 * next connection when its own broke while it ran: a claim the server took, or a `WAIT`, which on
 * a new connection answers at once for writes it never covered).
 */
export interface RedisStoreSentinel {
  readonly isOpen: boolean;
  getSentinelNode(): unknown;
  _execute<T>(
    isReadonly: boolean | undefined,
    fn: (client: SentinelPrimary) => Promise<T>,
  ): Promise<T>;
}

/** The client Sentinel hands a command to: one connection to the current primary. */
export interface SentinelPrimary {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: string[], options?: { timeout?: number }): Promise<unknown>;
  on(event: "ready", listener: () => void): unknown;
}

/** Whether `client` is a node-redis Sentinel client (it has `getSentinelNode`). */
export function isSentinel(client: unknown): client is RedisStoreSentinel {
  return (
    typeof client === "object" &&
    client !== null &&
    typeof (client as { getSentinelNode?: unknown }).getSentinelNode === "function"
  );
}

/** Why a Sentinel client cannot be used, or undefined when it can (checked at construction). */
export function sentinelProblem(client: RedisStoreSentinel): string | undefined {
  if (typeof (client as { _execute?: unknown })._execute !== "function") {
    return "the Sentinel client has no _execute: pass a node-redis 5 createSentinel() client";
  }
  return undefined;
}

/**
 * Thrown instead of sending a command on a connection other than the one it was meant for:
 * `sent` false when it was handed to a connection opened after it began (a reconnection or a
 * failover: nothing went out; the store runs its checks at connect on that connection, then
 * sends it once more); `sent` true when node-redis hands it over again after its connection broke
 * while it ran (it may have run: it is not sent twice).
 */
export class ConnectionChanged extends Error {
  constructor(readonly sent: boolean) {
    super(
      sent
        ? "the connection to the primary broke during the command; it was not sent again"
        : "the connection to the primary changed before the command went out; it was not sent",
    );
    this.name = "ConnectionChanged";
  }
}

/** How often each primary client has become ready since the store first saw it (reconnections). */
const readiesByClient = new WeakMap<SentinelPrimary, { count: number }>();

/** The count of `client`'s `ready` events, counted by one listener however many stores use it. */
function readiesOf(client: SentinelPrimary): { readonly count: number } {
  let readies = readiesByClient.get(client);
  if (readies === undefined) {
    const counter = { count: 0 };
    client.on("ready", () => {
      counter.count += 1;
    });
    readiesByClient.set(client, counter);
    readies = counter;
  }
  return readies;
}

/**
 * A transport over a node-redis Sentinel client: every command goes to the primary the sentinels
 * name, and is written only on the connection that was current when it began.
 *
 * node-redis's Sentinel client retries a command whose connection broke (after rediscovering the
 * primary), so a claim the server ran but whose answer was lost could be sent again; and a `WAIT`
 * answers only for the writes of its own connection, so one sent on a new connection (a
 * reconnection, or the promoted replica) answers at once for writes it never covered. So each new
 * connection (a new primary's client, or a reconnection of the current one, counted by its `ready`
 * events) starts a new generation when a command is handed to it: a command goes out only in the generation it began in, a
 * session's commands (a script and its `WAIT`) in the generation of its first, at most once, and
 * otherwise fail with {@link ConnectionChanged}. `primariesId` is the generation, so the store
 * runs its checks at connect again before anything else goes out on a new connection. A command
 * handed over after its `timeoutMs` (Sentinel waits for a failover to finish) is refused too: the
 * store has answered its caller by then.
 *
 * The store needs one connection to the primary: a client with `masterPoolSize` above 1 takes
 * its connections in turn (unless `reserveClient` pins one), and a `WAIT` could then not follow
 * its write; such a client is refused (`misconfigured`) when a second open connection shows up.
 */
export function sentinelTransport(sentinel: RedisStoreSentinel): Transport {
  let generation = 0;
  let current: SentinelPrimary | undefined;
  let currentReadies = 0;

  /** Follows the connection Sentinel hands out: a new one starts a generation. */
  function observe(client: SentinelPrimary): void {
    const readies = readiesOf(client);
    if (client === current) {
      if (readies.count !== currentReadies) {
        currentReadies = readies.count;
        generation += 1;
      }
      return;
    }
    if (current !== undefined) {
      if (current.isOpen) {
        throw new StoreError({
          reason: "misconfigured",
          operation: "connect",
          message:
            "RedisStore: the Sentinel client uses several connections to the primary in turn (masterPoolSize above 1), so a WAIT could not follow its write; use masterPoolSize 1 (the default) or reserveClient: true.",
        });
      }
      generation += 1;
    }
    current = client;
    currentReadies = readies.count;
  }

  /**
   * Sends `args` if Sentinel hands it to a connection of generation `bound`, at most once and
   * within `timeoutMs`; `accepted` learns the generation it went out in.
   */
  function sendIn(
    bound: number,
    args: string[],
    timeoutMs: number,
    accepted?: (generation: number) => void,
  ): Promise<unknown> {
    if (!sentinel.isOpen) {
      return Promise.reject(
        new StoreError({
          reason: "unavailable",
          operation: "send",
          message:
            "RedisStore: the Sentinel client is not connected; call its connect() before passing it, and close it only after the store.",
        }),
      );
    }
    const deadline = Date.now() + timeoutMs;
    let sent = false;
    return sentinel._execute(false, async (client) => {
      observe(client);
      if (sent) throw new ConnectionChanged(true);
      if (generation !== bound) throw new ConnectionChanged(false);
      const left = deadline - Date.now();
      if (left <= 0) throw new CommandTimeout(timeoutMs);
      sent = true;
      accepted?.(generation);
      try {
        return await client.sendCommand(args, { timeout: left });
      } catch (error) {
        // A replica refused it (the primary was demoted): it did not run, Sentinel may resend it.
        if (error instanceof Error && error.message.startsWith("READONLY")) sent = false;
        throw error;
      }
    });
  }

  const send: Send = (_route, args, timeoutMs) => sendIn(generation, args, timeoutMs);

  return {
    cluster: false,
    send,
    session(): Send {
      let at: number | undefined;
      return (_route, args, timeoutMs) =>
        sendIn(at ?? generation, args, timeoutMs, (g) => {
          at ??= g;
        });
    },
    primariesId: () => `sentinel:${generation}`,
    primaries: () => [(args, timeoutMs = 2_000) => send(undefined, args, timeoutMs)],
  };
}
