/**
 * The words of docs/architecture.md §2 as types: channels, origins, certainty, effects, actions and the
 * closed set of reasons a decision carries into metrics. The reasons, with the actions and
 * certainties their records use, are defined in reasons.ts (one record per reason).
 */

export {
  ACTIONS,
  type Action,
  type Certainty,
  PERSON_RESOLVABLE,
  REASONS,
  type Reason,
} from "./reasons.ts";

/** Where a failure surfaced: the tool reported it, the peer sent a JSON-RPC error, or the client failed. */
export type Channel = "tool" | "protocol" | "local";

/** Who produced the error object: this process (`local`) or the server (`peer`). Untagged means `peer`. */
export type Origin = "local" | "peer";

/** What a tool does to the world. Anything nobody described is `mutating`. */
export type Effect = "read_only" | "idempotent" | "mutating";

/** A value or a promise of it: what store and hook methods return. */
export type MaybePromise<T> = T | Promise<T>;
