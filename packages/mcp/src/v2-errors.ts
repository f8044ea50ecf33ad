import type { LocalKind } from "@governor/core";

/**
 * How `@modelcontextprotocol/client` 2.x errors are told apart without importing it (a host may
 * have only 1.32 installed). 2.x stamps every error it throws with brands under one registry
 * symbol, the same across bundled copies and SDK versions; the class names are the fallback.
 */
const BRANDS = Symbol.for("mcp.sdk.errorBrands");

function isRecord(value: unknown): value is Record<string | symbol, unknown> {
  return typeof value === "object" && value !== null;
}

/** Whether `error` carries 2.x's brand `brand` (e.g. `mcp.SdkError`). */
function hasBrand(error: unknown, brand: string): boolean {
  try {
    if (!isRecord(error) || !Object.hasOwn(error, BRANDS)) return false;
    const brands = error[BRANDS];
    return brands instanceof Set && brands.has(brand);
  } catch {
    return false;
  }
}

function nameOf(error: unknown): string {
  try {
    return isRecord(error) && typeof error.name === "string" ? error.name : "";
  } catch {
    return "";
  }
}

/**
 * A 2.x `ProtocolError` (or a subclass: `UrlElicitationRequiredError`, `ResourceNotFoundError`,
 * `UnsupportedProtocolVersionError`, `MissingRequiredClientCapabilityError`): a JSON-RPC error
 * response from the peer, its message verbatim (no `MCP error -32xxx:` prefix, unlike 1.32).
 * The client's own output-schema checks throw it too.
 */
export function isV2ProtocolError(
  error: unknown,
): error is { code: number; message: string; data?: unknown } {
  if (!isRecord(error) || typeof error.code !== "number") return false;
  return hasBrand(error, "mcp.ProtocolError") || nameOf(error) === "ProtocolError";
}

/** A 2.x `SdkError` or `SdkHttpError`: raised on the client side, never read from the wire. */
export interface V2SdkError {
  readonly code: string;
  readonly message: string;
  readonly data?: unknown;
}

export function isV2SdkError(error: unknown): error is V2SdkError {
  if (!isRecord(error) || typeof error.code !== "string") return false;
  const name = nameOf(error);
  return hasBrand(error, "mcp.SdkError") || name === "SdkError" || name === "SdkHttpError";
}

/** 2.x's `UnauthorizedError` (the HTTP transport's 401 without a usable auth provider). */
export function isV2Unauthorized(error: unknown): boolean {
  return hasBrand(error, "mcp.UnauthorizedError");
}

/** 2.x's `SseError` (its event stream's `GET` failed while connecting; `code` is the status). */
export function isV2SseError(error: unknown): boolean {
  return hasBrand(error, "mcp.SseError");
}

/** 2.x's `OAuthError` (an authorization server refused a grant): the host's to fix. */
export function isV2OAuthError(error: unknown): boolean {
  return hasBrand(error, "mcp.OAuthError");
}

/** The HTTP status a 2.x `SdkHttpError` carries in `data.status`. */
export function v2HttpStatus(error: V2SdkError): number | undefined {
  const data = isRecord(error.data) ? error.data : undefined;
  return typeof data?.status === "number" ? data.status : undefined;
}

/**
 * The local kind of a 2.x `SdkErrorCode` (string codes; `SdkHttpError`s are read by their
 * status first). Codes raised before anything is sent map to `not_connected` (certainty
 * `not_sent`, the host's); a check the client cannot pass (capability, era, input rounds) is
 * `thrown` (the host's). `REQUEST_TIMEOUT` is both the SDK's timer (`data.timeout`,
 * `data.maxTotalTimeout`) and a caller's abort (no `data`: the message is `String(reason)`).
 */
export function v2LocalKind(error: V2SdkError): LocalKind {
  switch (error.code) {
    case "REQUEST_TIMEOUT": {
      const data = isRecord(error.data) ? error.data : undefined;
      const timer = typeof data?.timeout === "number" || typeof data?.maxTotalTimeout === "number";
      return timer ? "timeout" : "aborted";
    }
    case "CONNECTION_CLOSED":
      return "connection_closed";
    case "NOT_CONNECTED":
    case "ALREADY_CONNECTED":
    case "NOT_INITIALIZED":
    case "ERA_NEGOTIATION_FAILED":
      return "not_connected";
    case "SEND_FAILED":
      return "network";
    case "INVALID_RESULT":
    case "UNSUPPORTED_RESULT_TYPE":
    case "CLIENT_HTTP_UNEXPECTED_CONTENT":
      return "malformed_result";
    default:
      // CAPABILITY_NOT_SUPPORTED, METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION,
      // INPUT_REQUIRED_ROUNDS_EXCEEDED, LIST_PAGINATION_EXCEEDED, codes a later 2.x adds.
      return "thrown";
  }
}
