/**
 * What the host reads of an error the client's `onerror` reports. Some of the SDK's reports quote
 * a whole JSON-RPC message, tool output included: those are reduced to what the host needs (the
 * message id); any other text is redacted.
 */

/** SDK 1.32's reports that quote a whole message (`Protocol._onresponse`, `_onnotification`…). */
const QUOTING: readonly { prefix: string; text: (id: string | undefined) => string }[] = [
  {
    prefix: "Received a response for an unknown message ID: ",
    text: (id) =>
      `An answer to request ${id ?? "(no id)"} arrived after the request ended (timed out or cancelled); dropped`,
  },
  {
    prefix: "Received a progress notification for an unknown token: ",
    text: () => "A progress notification for no request in flight arrived; dropped",
  },
  { prefix: "Unknown message type: ", text: () => "A message of unknown type arrived; dropped" },
];

/** Longest id the text keeps. */
const MAX_ID = 64;

/** The host-facing text of a transport error, and whether its raw error may go with it. */
export interface TransportErrorText {
  readonly message: string;
  /** False when the raw error quotes a whole message: the host gets the text alone. */
  readonly keepCause: boolean;
}

/**
 * Reduces an `onerror` report to what the host needs: the id of a late answer, never its body;
 * any other message goes through `redactText`.
 * @example
 * transportErrorText('Received a response for an unknown message ID: {"jsonrpc":"2.0","id":7,…}', redact)
 * // → { message: "An answer to request 7 arrived after the request ended …", keepCause: false }
 */
export function transportErrorText(
  message: string,
  redactText: (text: string) => string,
): TransportErrorText {
  for (const quoting of QUOTING) {
    if (message.startsWith(quoting.prefix)) {
      return {
        message: quoting.text(messageId(message.slice(quoting.prefix.length))),
        keepCause: false,
      };
    }
  }
  return { message: redactText(message), keepCause: true };
}

/** The `id` of a quoted JSON-RPC message, when it is a short string or a number. */
function messageId(json: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const id: unknown = (parsed as { id?: unknown }).id;
  if (typeof id === "number" && Number.isFinite(id)) return String(id);
  if (typeof id === "string" && id.length <= MAX_ID && /^[\w.:-]+$/.test(id))
    return JSON.stringify(id);
  return undefined;
}
