/**
 * What the proxy accepts from a host, checked by hand once per message (JSON-RPC 2.0 as MCP uses
 * it): one object per line; `jsonrpc: "2.0"`; a request's `id` a string or an integer, never
 * null; `params`, when present, an object. Pure: the transport (host-stdio.ts) answers what this
 * refuses. And the params of `tools/call`, checked before the SDK's own validation, which answers
 * a bad one with -32603 and a dump of its schema's issues.
 */
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";

/** JSON-RPC 2.0 error codes the proxy answers itself. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

/** A host's message as checked: pass it on, answer it with an error, or drop it (say why). */
export type Checked =
  | { readonly kind: "message"; readonly message: JSONRPCMessage }
  | {
      readonly kind: "reject";
      readonly code: number;
      /** The error's message, for the host and for stderr. */
      readonly message: string;
      readonly id: RequestId | null;
    }
  /** A notification or a response that is malformed: JSON-RPC answers neither. */
  | { readonly kind: "drop"; readonly message: string };

/**
 * An object as `JSON.parse` makes one, which a schema's copy would hand on equal: its prototype
 * `Object.prototype`, and no own `__proto__` key (a copy would set the prototype instead).
 */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  Object.getPrototypeOf(value) === Object.prototype &&
  !Object.hasOwn(value, "__proto__");

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isId = (value: unknown): value is RequestId =>
  typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value));

/** Checks one parsed line from the host. */
export function checkHostMessage(value: unknown): Checked {
  if (Array.isArray(value)) {
    return invalid(
      "batches are not supported (MCP removed JSON-RPC batching in 2025-06-18); send one message per line",
      null,
    );
  }
  if (!isObject(value)) {
    return invalid(`a message must be a JSON object, got ${describe(value)}`, null);
  }
  const id = isId(value.id) ? value.id : null;
  if (value.jsonrpc !== "2.0") {
    return invalid(`jsonrpc must be "2.0", got ${describe(value.jsonrpc)}`, id);
  }
  if ("method" in value) {
    if (typeof value.method !== "string") {
      return invalid(`method must be a string, got ${describe(value.method)}`, id);
    }
    const request = "id" in value;
    if (request && id === null) {
      return invalid(`id must be a string or an integer, got ${describe(value.id)}`, null);
    }
    if ("params" in value && !isObject(value.params)) {
      const text = `params must be an object, got ${describe(value.params)}`;
      return request
        ? { kind: "reject", code: INVALID_PARAMS, message: `Invalid params: ${text}`, id }
        : { kind: "drop", message: `notification ${value.method}: ${text}` };
    }
    return { kind: "message", message: value as JSONRPCMessage };
  }
  // A response to one of the server's requests (sampling, elicitation, roots).
  const answered = ("result" in value ? 1 : 0) + ("error" in value ? 1 : 0);
  if (id === null || answered !== 1 || ("error" in value && !isObject(value.error))) {
    return {
      kind: "drop",
      message:
        "a response needs a string or integer id and exactly one of result or error (an object)",
    };
  }
  return { kind: "message", message: value as JSONRPCMessage };
}

/**
 * Why the params of a `tools/call` are not what MCP asks (`name` a string, `arguments` an object
 * when present), in one short sentence; undefined when they are.
 */
export function toolCallParamsProblem(params: unknown): string | undefined {
  if (!isObject(params)) return `params must be an object, got ${describe(params)}`;
  if (typeof params.name !== "string") {
    return `name must be a string (the tool's name), got ${describe(params.name)}`;
  }
  if (params.arguments !== undefined && !isObject(params.arguments)) {
    return `arguments must be an object of the tool's arguments, got ${describe(params.arguments)}`;
  }
  if (params._meta !== undefined && !isObject(params._meta)) {
    return `_meta must be an object, got ${describe(params._meta)}`;
  }
  return undefined;
}

function invalid(text: string, id: RequestId | null): Checked {
  return { kind: "reject", code: INVALID_REQUEST, message: `Invalid Request: ${text}`, id };
}

/** A value's kind, for an error message (never the value itself: it may be long or secret). */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value === undefined) return "nothing";
  if (typeof value === "string") return value.length <= 16 ? JSON.stringify(value) : "a string";
  if (typeof value === "number") return Number.isInteger(value) ? "a number" : "a fraction";
  return `a ${typeof value}`;
}
