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

  constructor(fields: {
    tool: string;
    server?: string | undefined;
    reason: string;
    channel: string;
    failureCode?: number | string | undefined;
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
  }
}
