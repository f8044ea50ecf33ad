import { type Certainty, REASONS, type Reason } from "./types.ts";

const MARKER = Symbol.for("governor.error");

/** Stable codes of {@link GovernorError}. */
export type GovernorErrorCode =
  | "invalid_policy"
  | "invalid_options"
  | "host_error"
  | "run_ended"
  | "idempotency_conflict"
  | "ledger_full"
  | "store_error";

/**
 * The one error base class of Governor: a stable string `code`, a `cause`, and a cross-realm
 * check that works across copies of the package.
 */
export class GovernorError extends Error {
  /** Stable machine-readable code. */
  readonly code: GovernorErrorCode;
  readonly [MARKER]: true = true;

  constructor(code: GovernorErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GovernorError";
    this.code = code;
  }

  /** True for any GovernorError, even one from another copy of the package. */
  static isInstance(value: unknown): value is GovernorError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}

/**
 * A failure that only the host can handle (a JSON-RPC error from the server, a broken session,
 * a malformed reply). It never reaches the model's context.
 */
export class HostError extends GovernorError {
  /** The tool whose call failed. */
  readonly tool: string;
  /** The server, when known. */
  readonly server: string | undefined;
  /** The failure's reason (`protocol_error`, `session_expired`, `malformed_response`, …). */
  readonly reason: string;
  /** Where the failure surfaced. */
  readonly channel: string;
  /** The JSON-RPC or system code, when there is one. */
  readonly failureCode: number | string | undefined;
  /**
   * Whether the call may have had its effect, when the run knows: `not_sent`, `failed` or
   * `unknown` (a write that may have happened). Undefined for trouble outside a call's attempts.
   */
  readonly certainty: Certainty | undefined;
  /**
   * The call's idempotency key when its write may have happened (an attempt's outcome was
   * unknown): a person who checked settles it with `governor.settle(key, …)`.
   */
  readonly idempotencyKey: string | undefined;

  constructor(fields: {
    tool: string;
    server?: string | undefined;
    reason: string;
    channel: string;
    failureCode?: number | string | undefined;
    certainty?: Certainty | undefined;
    idempotencyKey?: string | undefined;
    message: string;
    cause?: unknown;
  }) {
    super("host_error", fields.message, { cause: fields.cause });
    this.name = "HostError";
    this.tool = fields.tool;
    this.server = fields.server;
    this.reason = fields.reason;
    this.channel = fields.channel;
    this.failureCode = fields.failureCode;
    this.certainty = fields.certainty;
    this.idempotencyKey = fields.idempotencyKey;
  }

  /**
   * What an adapter gives the host when `run.call` rejects: a `HostError` as it is; anything else
   * (a store that failed, a bug) wrapped in one whose message is fixed, the raw error its `cause`,
   * so a host that logs or shows `message` does not spread a connection string.
   * @example
   * try { await run.call(call, execute); } catch (err) { throw HostError.from(err, call.tool); }
   */
  static from(err: unknown, tool: string, server?: string): HostError {
    if (GovernorError.isInstance(err) && err.code === "host_error") return err as HostError;
    const code = GovernorError.isInstance(err) ? err.code : "unexpected_error";
    return new HostError({
      tool,
      server,
      reason: code,
      channel: "local",
      message: `${tool}: Governor could not complete the call (${code}); the error is the cause`,
      cause: err,
    });
  }

  /** The run's stop reason for this failure: `reason` when it is one, else `protocol_error`. */
  get stopReason(): Reason {
    return Object.hasOwn(REASONS, this.reason) ? (this.reason as Reason) : "protocol_error";
  }
}
