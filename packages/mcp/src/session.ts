import { failureFromError, type LocalKind } from "@governor/core";
import { BoundError, within } from "./bound.ts";
import { LocalCheckError } from "./map-error.ts";
import type { McpClient } from "./sdk.ts";

/** A client's transport, told apart by identity only. */
type Transport = object;

/** Options of {@link createSession}. */
export interface SessionOptions {
  /** The host's hook connecting the client to a new transport; none: no reconnect. */
  readonly reconnect: ((signal: AbortSignal) => Promise<void>) | undefined;
  /** Bound of one whole reconnect: waiting for the old session's calls, closing it, the hook. */
  readonly limitMs: number;
  /** The host-facing text of what the hook threw (redacted: it may quote a server's answer). */
  readonly describe: (error: unknown) => string;
}

/**
 * The client's session as the adapter sees it: which calls are in flight on which transport,
 * whether a transport's HTTP session is gone, and the one reconnect at a time that replaces it.
 */
export interface Session {
  /** Counts a request on `transport` until its entry {@link leave}s. */
  enter(transport: Transport | undefined): SessionEntry;
  /** The request is done (once; a second leave of the same entry does nothing). */
  leave(entry: SessionEntry): void;
  /** Requests in flight on any transport. */
  inFlight(): number;
  /** The server said `transport`'s session is gone (HTTP 404): the next call reconnects first. */
  gone(transport: Transport | undefined): void;
  /** No reconnect is due or running: a request may go now, without {@link ensure}. */
  ready(): boolean;
  /**
   * Reconnects when the client has no transport or its session is gone and the host gave a hook.
   * Waits at most `limitMs` and not past `signal`. Any failure means nothing was sent: it throws a
   * {@link LocalCheckError} of a `not_sent` kind (`not_connected` unless the hook's error was a
   * refused connection or a failed spawn).
   */
  ensure(signal: AbortSignal): Promise<void>;
}

/** The requests in flight on one transport, and who waits for none to be. */
interface Held {
  count: number;
  idle: (() => void)[];
}

/** One request counted on its transport, until it leaves. */
export interface SessionEntry {
  readonly held: Held | undefined;
  left: boolean;
}

/** Kinds a failed reconnect keeps: they already say nothing was sent. */
const NOT_SENT_KINDS: ReadonlySet<LocalKind> = new Set([
  "connection_refused",
  "spawn_failed",
  "not_connected",
]);

/**
 * Keeps the session of `client`. A gone session is closed only once the calls in flight on it
 * have their own answers (each its own 404, so each is provably unsent and is sent again), or
 * once the reconnect's time is up: a call cut by that close may have been processed, and stays
 * `unknown`.
 */
export function createSession(client: McpClient, options: SessionOptions): Session {
  // A transport's entry stays at count 0 for its next request (no Map churn per call); entries of
  // other transports at 0 are dropped when a new transport is first entered.
  const counts = new Map<Transport, Held>();
  let total = 0;
  let goneTransport: Transport | undefined;
  let reopening: Promise<void> | undefined;

  const drained = (transport: Transport): Promise<void> => {
    const held = counts.get(transport);
    return held !== undefined && held.count > 0
      ? new Promise((resolve) => held.idle.push(resolve))
      : Promise.resolve();
  };

  const reopen = async (reconnect: (signal: AbortSignal) => Promise<void>): Promise<void> => {
    // Armed before anything else: it ends the whole reconnect no later than a caller's own bound.
    const controller = new AbortController();
    const limit = options.limitMs;
    const timer = setTimeout(
      () => controller.abort(new BoundError("timeout", `did not finish within ${limit} ms`)),
      limit,
    );
    try {
      const old = client.transport;
      if (old !== undefined) {
        // Let the calls still out on the old session get their answers before cutting them.
        await within(drained(old), limit, controller.signal).catch(() => undefined);
        if (client.transport === old) await client.close().catch(() => undefined);
      }
      await within(Promise.resolve(reconnect(controller.signal)), limit, controller.signal);
      goneTransport = undefined;
    } catch (error) {
      controller.abort(error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };

  const failed = (error: unknown): LocalCheckError => {
    if (error instanceof BoundError) {
      return new LocalCheckError(
        "not_connected",
        error.why === "aborted" ? "Aborted while reconnecting" : `Reconnect ${error.message}`,
      );
    }
    const kind = failureFromError(error, { origin: "local" }).local;
    return new LocalCheckError(
      kind !== undefined && NOT_SENT_KINDS.has(kind) ? kind : "not_connected",
      `Reconnect failed: ${options.describe(error)}`,
      { cause: error },
    );
  };

  const ready = (): boolean => {
    if (!options.reconnect) return true;
    // While a reconnect runs, the client may already hold the new transport, before its
    // session is initialized: a request sent now would go without a session id.
    const current = client.transport;
    return !reopening && current !== undefined && current !== goneTransport;
  };

  return {
    enter(transport) {
      if (transport === undefined) return { held: undefined, left: true };
      let held = counts.get(transport);
      if (held === undefined) {
        for (const [other, idle] of counts) if (idle.count === 0) counts.delete(other);
        held = { count: 0, idle: [] };
        counts.set(transport, held);
      }
      held.count++;
      total++;
      return { held, left: false };
    },
    leave(entry) {
      const held = entry.held;
      if (entry.left || held === undefined) return;
      entry.left = true;
      total--;
      if (--held.count > 0 || held.idle.length === 0) return;
      const idle = held.idle;
      held.idle = [];
      for (const resolve of idle) resolve();
    },
    inFlight: () => total,
    gone(transport) {
      if (transport !== undefined && transport === client.transport) goneTransport = transport;
    },
    ready,
    async ensure(signal) {
      const reconnect = options.reconnect;
      if (!reconnect || ready()) return;
      if (!reopening) {
        const attempt = reopen(reconnect);
        reopening = attempt;
        attempt
          .finally(() => {
            if (reopening === attempt) reopening = undefined;
          })
          .catch(() => undefined);
      }
      try {
        await within(reopening, options.limitMs, signal);
      } catch (error) {
        throw failed(error);
      }
    },
  };
}
