import type { Channel, Origin } from "../types.ts";
import { isWhitespace } from "./redact/scan.ts";
import { redact } from "./redact.ts";
import { retryHintInText } from "./text-hint.ts";

/**
 * Local failure kinds: what the client side can report without the server.
 */
export type LocalKind =
  | "timeout"
  | "aborted"
  | "connection_closed"
  | "connection_refused"
  | "not_connected"
  | "network"
  | "http_status"
  | "malformed_result"
  | "spawn_failed"
  | "thrown";

/** The draft MCP tool-failure metadata: `_meta["io.modelcontextprotocol/toolFailure"]`. */
export interface ToolFailureMeta {
  readonly class?: string;
  readonly code?: string;
  readonly retryable?: boolean;
  /** ISO timestamp or epoch milliseconds before which a retry is pointless. */
  readonly retryNotBefore?: string | number;
}

/** The `_meta` key of the draft MCP tool-failure metadata. */
export const TOOL_FAILURE_META_KEY = "io.modelcontextprotocol/toolFailure";

/**
 * What came back instead of a usable result, normalized (docs/architecture.md §2). Raw, not redacted:
 * the model only ever sees text produced by `redact`.
 */
export interface Failure {
  readonly channel: Channel;
  readonly origin: Origin;
  /** The failure text, with the SDK's `MCP error -32xxx: ` prefixes stripped. */
  readonly text: string;
  /** JSON-RPC error code (number) or a Node/system error code such as `ECONNRESET` (string). */
  readonly code?: number | string;
  /** HTTP status, from a transport error or a tool's structured error. */
  readonly httpStatus?: number;
  /** A server's retry hint (Retry-After, `retryAfterMs`, `retryNotBefore`) in ms from now. */
  readonly retryAfterMs?: number;
  /** The JSON-RPC error's `data`, verbatim. */
  readonly data?: unknown;
  /** `structuredContent` of an `isError` result. */
  readonly structured?: unknown;
  /** The draft MCP tool-failure metadata, when the result carried it. */
  readonly toolFailure?: ToolFailureMeta;
  /** Set for `local` failures. */
  readonly local?: LocalKind;
  /** The raw thing that failed (error object or result), for the host and telemetry only. */
  readonly raw?: unknown;
}

const MCP_PREFIX = /^(?:\s*MCP error -?\d+:\s*)+/;

/** Strips the SDK's `MCP error -32602: ` prefixes (they can be doubled). */
export function stripMcpPrefix(text: string): string {
  return text.replace(MCP_PREFIX, "");
}

/** The smallest view of an MCP `CallToolResult` that core needs; core has no SDK dependency. */
export interface ToolResultLike {
  readonly content?: ReadonlyArray<{ readonly type: string; readonly text?: unknown }> | unknown;
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
  readonly _meta?: Record<string, unknown>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** Joins the text of all text content blocks of a result. */
export function resultText(result: ToolResultLike): string {
  const content = Array.isArray(result.content) ? result.content : [];
  // One text block (the usual error result) is its own text: the same string each time the same
  // result is read, so the judge's memos find it without hashing a new string.
  let only: string | undefined;
  let parts: string[] | undefined;
  for (const block of content) {
    if (isRecord(block) && block.type === "text" && typeof block.text === "string") {
      if (only === undefined && parts === undefined) only = block.text;
      else {
        parts ??= [only as string];
        only = undefined;
        parts.push(block.text);
      }
    }
  }
  return parts !== undefined ? joinBlocks(parts) : (only ?? "");
}

/**
 * The text blocks of a result, one a line; but where a block ends and the next starts inside one
 * word (no whitespace on either side) and that word, whole, is something redaction replaces (a
 * token, a key, a path cut in two), the blocks are joined as one word: each piece alone reads as
 * nothing, and the model would read them all. The word is read across every joint it spans (a key
 * in three blocks, or one character a block), not two blocks at a time: the third piece of a key
 * whose first two already read as one alone is still part of it.
 */
function joinBlocks(parts: readonly string[]): string {
  let out = parts[0] as string;
  let i = 1;
  while (i < parts.length) {
    const end = gluedRun(out, parts, i);
    if (end === i) {
      out += `\n${parts[i] as string}`;
      i++;
    } else {
      for (; i < end; i++) out += parts[i] as string;
    }
  }
  return out;
}

/** The longest word {@link gluedRun} reads on each side of a joint. */
const MAX_JOINT_WORD = 512;

/** Whether `before` and `after` meet inside a word: no whitespace on either side of the joint. */
function glued(before: string, after: string): boolean {
  return (
    before !== "" &&
    after !== "" &&
    !isWhitespace(before.charCodeAt(before.length - 1)) &&
    !isWhitespace(after.charCodeAt(0))
  );
}

/** Where the last word of `text` starts (its last {@link MAX_JOINT_WORD} characters at most). */
function lastWordStart(text: string): number {
  let start = text.length;
  while (start > 0 && text.length - start < MAX_JOINT_WORD) {
    if (isWhitespace(text.charCodeAt(start - 1))) break;
    start--;
  }
  return start;
}

/** How many characters the first word of `text` has ({@link MAX_JOINT_WORD} at most). */
function firstWordEnd(text: string): number {
  let end = 0;
  while (end < text.length && end < MAX_JOINT_WORD && !isWhitespace(text.charCodeAt(end))) end++;
  return end;
}

/**
 * How far the blocks from `parts[from]` on are joined to `before` without a line between: the
 * index of the first block after them, or `from` when `parts[from]` starts a line of its own.
 * The word that starts at the end of `before` is read once, on through `parts[from]` and the
 * blocks after it while each joint is glued: when it spans two blocks or more and redaction
 * replaces it whole, every block it touches is joined. Else the first joint alone decides (see
 * {@link splitsSecret}), from the same word's first two pieces. Bounded: the word read is
 * {@link MAX_JOINT_WORD} characters on each side of the first joint at most.
 */
function gluedRun(before: string, parts: readonly string[], from: number): number {
  if (!glued(before, parts[from] as string)) return from;
  // `before` ends in a word (the joint is glued): `head` is not empty, and the walk below reads
  // `parts[from]` at least.
  const head = before.slice(lastWordStart(before));
  let word = head;
  let end = from;
  let last = head;
  let firstPiece = "";
  while (end < parts.length && glued(last, parts[end] as string)) {
    const part = parts[end] as string;
    const wordEnd = firstWordEnd(part);
    const piece = part.slice(0, wordEnd);
    if (end === from) firstPiece = piece;
    word += piece;
    end++;
    // A block with whitespace, or a word grown past the bound, ends it.
    if (wordEnd < part.length || word.length - head.length >= MAX_JOINT_WORD) break;
    last = part;
  }
  // One block only: the pairwise rule decides (it keeps a word glued to a whole path apart).
  if (end > from + 1 && redact(word, { maxLength: word.length * 2 }) !== word) return end;
  return splitsSecret(head, firstPiece) ? from + 1 : from;
}

/**
 * Whether the last word of one block (`first`) and the first word of the next (`second`), glued,
 * are a secret split in two: redaction replaces them joined, and not `first` alone (a half it
 * already replaces alone stays on its own line), unless redaction reads `second` as part of what
 * it replaces in `first`: then that half is a piece of the same secret.
 */
function splitsSecret(first: string, second: string): boolean {
  const word = first + second;
  const whole = redact(word, { maxLength: word.length * 2 });
  if (whole === word) return false;
  const alone = redact(first, { maxLength: first.length * 2 });
  return alone === first || whole !== `${alone}${second}`;
}

/** Parses a Retry-After value (seconds or an HTTP date) into ms from `now`. */
export function parseRetryAfter(value: unknown, now: number): number | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value * 1000;
  if (typeof value !== "string" || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function finiteNonNegative(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function readToolFailureMeta(meta: unknown): ToolFailureMeta | undefined {
  if (!isRecord(meta)) return undefined;
  const raw = meta[TOOL_FAILURE_META_KEY];
  if (!isRecord(raw)) return undefined;
  const out: {
    class?: string;
    code?: string;
    retryable?: boolean;
    retryNotBefore?: string | number;
  } = {};
  if (typeof raw.class === "string") out.class = raw.class;
  if (typeof raw.code === "string") out.code = raw.code;
  if (typeof raw.retryable === "boolean") out.retryable = raw.retryable;
  if (typeof raw.retryNotBefore === "string" || typeof raw.retryNotBefore === "number") {
    out.retryNotBefore = raw.retryNotBefore;
  }
  return out;
}

/** Reads a retry hint from a JSON-RPC `data` or structured error object. */
function hintFrom(source: unknown, now: number): number | undefined {
  if (!isRecord(source)) return undefined;
  const ms = finiteNonNegative(source.retryAfterMs);
  if (ms !== undefined) return ms;
  if ("retryAfter" in source) return parseRetryAfter(source.retryAfter, now);
  if ("retry_after" in source) return parseRetryAfter(source.retry_after, now);
  return undefined;
}

function statusFrom(source: unknown): number | undefined {
  if (!isRecord(source)) return undefined;
  for (const key of ["status", "statusCode", "httpStatus"]) {
    const v = source[key];
    if (typeof v === "number" && Number.isInteger(v) && v >= 100 && v <= 599) return v;
  }
  return undefined;
}

function retryNotBeforeMs(value: string | number | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const at = typeof value === "number" ? value : Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/**
 * Normalizes an `isError` tool result: text of all text blocks, `structuredContent` (status and
 * retry hints read from it or from its `error` field), and the draft tool-failure `_meta`. A
 * result that cannot be read (a getter or a proxy that throws: a local tool can return any
 * object) is one without text, never a throw: what it threw may quote a secret, and a throw here
 * would leave the call's idempotency key unsettled.
 */
export function failureFromResult(result: ToolResultLike, now = Date.now()): Failure {
  try {
    return readResult(result, now);
  } catch {
    return { channel: "tool", origin: "peer", text: "", raw: result };
  }
}

function readResult(result: ToolResultLike, now: number): Failure {
  const text = stripMcpPrefix(resultText(result));
  const structured = result.structuredContent;
  const errorPart =
    isRecord(structured) && isRecord(structured.error) ? structured.error : structured;
  const toolFailure = readToolFailureMeta(result._meta);
  const httpStatus = statusFrom(errorPart);
  const code =
    isRecord(errorPart) &&
    (typeof errorPart.code === "string" || typeof errorPart.code === "number")
      ? errorPart.code
      : undefined;
  const retryAfterMs =
    retryNotBeforeMs(toolFailure?.retryNotBefore, now) ??
    hintFrom(errorPart, now) ??
    retryHintInText(text, now);
  return {
    channel: "tool",
    origin: "peer",
    text,
    ...(code !== undefined && { code }),
    ...(httpStatus !== undefined && { httpStatus }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(structured !== undefined && { structured }),
    ...(toolFailure !== undefined && { toolFailure }),
    raw: result,
  };
}

/** Options for {@link failureFromError}. */
export interface FromErrorOptions {
  /** Who made the error object. Only the call site knows; untagged means `peer`. */
  readonly origin?: Origin;
  /** Overrides the detected local kind (the adapter knows a timeout from an abort). */
  readonly local?: LocalKind;
  /** The clock, for Retry-After dates. */
  readonly now?: number;
  /**
   * The value is known to be a JSON-RPC error object from the wire (`{ code, message, data? }`),
   * whatever its code: `governor classify`'s `error` lines, an adapter that read the response
   * itself. Without it, only an `McpError` or a code in the JSON-RPC range counts as one.
   * @default false
   */
  readonly jsonRpc?: boolean;
}

/** The codes JSON-RPC 2.0 reserves for its own errors and for servers' (`-32768..-32000`). */
export function isJsonRpcCode(code: number): boolean {
  return Number.isInteger(code) && code >= -32768 && code <= -32000;
}

/**
 * Whether a thrown value is a JSON-RPC error: an `McpError` (the MCP SDK turns every error
 * response into one, whatever its code), or a numeric code in the JSON-RPC range. A gRPC status
 * (`14` UNAVAILABLE), a database's numeric code or a DOMException's legacy code is the tool's own.
 */
function isJsonRpcError(
  name: string | undefined,
  code: number,
  options: FromErrorOptions,
): boolean {
  return options.jsonRpc === true || name === "McpError" || isJsonRpcCode(code);
}

const NODE_LOCAL: Record<string, LocalKind> = {
  ECONNREFUSED: "connection_refused",
  ECONNRESET: "connection_closed",
  EPIPE: "connection_closed",
  ECONNABORTED: "connection_closed",
  ETIMEDOUT: "timeout",
  ESOCKETTIMEDOUT: "timeout",
  UND_ERR_CONNECT_TIMEOUT: "timeout",
  UND_ERR_HEADERS_TIMEOUT: "timeout",
  UND_ERR_BODY_TIMEOUT: "timeout",
  UND_ERR_SOCKET: "connection_closed",
  ENOTFOUND: "connection_refused",
  EAI_AGAIN: "network",
  EHOSTUNREACH: "connection_refused",
  ENETUNREACH: "connection_refused",
  ENOENT: "spawn_failed",
  EACCES: "spawn_failed",
};

function nodeCode(err: unknown): string | undefined {
  if (!isRecord(err)) return undefined;
  if (typeof err.code === "string") return err.code;
  const cause = err.cause;
  if (isRecord(cause) && typeof cause.code === "string") return cause.code;
  return undefined;
}

function messageOf(err: unknown): string {
  if (typeof err === "string") return err;
  if (isRecord(err) && typeof err.message === "string") return err.message;
  try {
    return String(err);
  } catch {
    return "unknown error";
  }
}

/**
 * What the host reads when a tool threw a value that says nothing a model could act on (`null`,
 * `undefined`, a number, a boolean, a symbol, a bigint, a function): judged by its text ("null",
 * "42") the model would be told to change its arguments. It is the tool's bug, a
 * `malformed_result` (the host's `malformed_response`). Errors, strings and other objects are read
 * as they are. Undefined for those.
 */
function speechlessThrow(err: unknown): string | undefined {
  if (err !== null && (typeof err === "object" || typeof err === "string")) return undefined;
  return `The tool threw ${err === null ? "null" : typeof err}, not an error`;
}

/**
 * Normalizes a thrown value or rejected promise: a JSON-RPC error shaped like the SDK's
 * `McpError` (numeric `code`, `message`, `data`), a Node error with a string `code`, a
 * `fetch failed` with `cause.code`, an `AbortError`, an HTTP status error, or anything else. A
 * thrown `null`, `undefined`, number, boolean, symbol, bigint or function is a `malformed_result`
 * (for the host) unless `options.local` names the kind: it carries nothing a model can act on.
 */
export function failureFromError(err: unknown, options: FromErrorOptions = {}): Failure {
  try {
    return readError(err, options);
  } catch {
    // A hostile or broken error object (a throwing getter) must not crash the agent loop.
    const origin = options.origin ?? "peer";
    return options.local !== undefined
      ? {
          channel: "local",
          origin: "local",
          text: "unreadable error",
          local: options.local,
          raw: err,
        }
      : {
          channel: origin === "local" ? "local" : "tool",
          origin,
          text: "unreadable error",
          local: "thrown",
          raw: err,
        };
  }
}

function readError(err: unknown, options: FromErrorOptions): Failure {
  const now = options.now ?? Date.now();
  const origin = options.origin ?? "peer";
  const text = stripMcpPrefix(messageOf(err));
  const rec = isRecord(err) ? err : undefined;
  const name = rec && typeof rec.name === "string" ? rec.name : undefined;
  const numericCode = rec && typeof rec.code === "number" ? rec.code : undefined;
  const data = rec?.data;
  const httpStatus = statusFrom(rec) ?? statusFrom(data);
  const retryAfterMs = hintFrom(data, now) ?? hintFrom(rec, now) ?? retryHintInText(text, now);
  const hints = {
    ...(httpStatus !== undefined && { httpStatus }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(data !== undefined && { data }),
    raw: err,
  };

  if (options.local !== undefined) {
    return {
      channel: "local",
      origin: "local",
      text,
      local: options.local,
      ...(numericCode !== undefined && { code: numericCode }),
      ...hints,
    };
  }
  const speechless = speechlessThrow(err);
  if (speechless !== undefined) {
    return {
      channel: "local",
      origin: "local",
      text: speechless,
      local: "malformed_result",
      raw: err,
    };
  }
  // Checked before numeric codes: a DOMException carries a legacy numeric `code` (20 for aborts).
  if (name === "AbortError" || name === "TimeoutError") {
    const local: LocalKind = name === "TimeoutError" ? "timeout" : "aborted";
    return { channel: "local", origin: "local", text, local, raw: err };
  }
  const jsonRpc = numericCode !== undefined && isJsonRpcError(name, numericCode, options);
  // A JSON-RPC error from the peer. Any other numeric code (gRPC, a driver's) is the tool's own.
  if (jsonRpc && origin === "peer") {
    return { channel: "protocol", origin, text, code: numericCode, ...hints };
  }
  const sys = nodeCode(err);
  // Only system-style codes (ECONNRESET, UND_ERR_SOCKET…) mean the client side failed; a code like
  // Postgres "23505" or Node's ERR_INVALID_ARG_VALUE is the tool's own refusal, judged by its text.
  // Own keys only: a thrown `code: "constructor"` is not a kind of ours.
  const known = sys !== undefined && Object.hasOwn(NODE_LOCAL, sys) ? NODE_LOCAL[sys] : undefined;
  if (sys !== undefined && (known !== undefined || /^(?:E[A-Z0-9]+|UND_ERR_[A-Z_]+)$/.test(sys))) {
    return {
      channel: "local",
      origin: "local",
      text,
      code: sys,
      local: known ?? "network",
      ...hints,
    };
  }
  if (text === "fetch failed") {
    return { channel: "local", origin: "local", text, local: "network", ...hints };
  }
  if (httpStatus !== undefined) {
    return { channel: "local", origin: "local", text, local: "http_status", ...hints };
  }
  if (jsonRpc) {
    return {
      channel: "local",
      origin: "local",
      text,
      code: numericCode,
      local: "thrown",
      ...hints,
    };
  }
  // A local tool (a plain function) that threw: the tool ran and reported failure. A numeric code
  // of its own (gRPC `14`, a driver's) stays for policy rules; the channel stays `tool`.
  return {
    channel: origin === "local" ? "local" : "tool",
    origin,
    text,
    local: "thrown",
    ...(numericCode !== undefined && { code: numericCode }),
    ...hints,
  };
}

/** Local failure kinds the CLI and adapters can name without an error object. */
export type NamedLocal = "timeout" | "connection_closed" | "connection_refused" | "aborted";

const LOCAL_TEXT: Record<NamedLocal, string> = {
  timeout: "Request timed out",
  connection_closed: "Connection closed",
  connection_refused: "Connection refused",
  aborted: "The call was aborted",
};

/** Builds a local failure from its kind alone. */
export function localFailure(kind: LocalKind, text?: string): Failure {
  return {
    channel: "local",
    origin: "local",
    text: text ?? LOCAL_TEXT[kind as NamedLocal] ?? kind,
    local: kind,
  };
}
