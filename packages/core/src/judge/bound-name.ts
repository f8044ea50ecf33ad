// Names a model invents (tools, servers), bounded before they go anywhere that keeps them: events,
// metric labels, learned-outcome keys.
import { sha256Hex } from "./canonical.ts";
import { redact } from "./redact.ts";

/** The longest tool, server or run name kept (MCP's limit for tool names). */
export const MAX_NAME = 128;

/** Names already bounded: tool names repeat on every event, redaction need not. */
const names = new Map<string, string>();
const MAX_CACHED = 1_024;

/** `text` cut to `max` characters with a hash of the whole, so distinct texts stay distinct. */
export function cutWithHash(text: string, whole: string, max: number): string {
  const suffix = `#${sha256Hex(whole).slice(0, 8)}`;
  return `${text.slice(0, Math.max(0, max - suffix.length))}${suffix}`;
}

/**
 * A tool or server name fit for an event, a metric label or a store key: redacted (a name a
 * model invents can carry a secret) and at most {@link MAX_NAME} characters. A name that had to
 * change ends with `#` and a short hash of the original, so two different names stay apart.
 */
export function boundName(name: string): string {
  const hit = names.get(name);
  if (hit !== undefined) return hit;
  const redacted = redact(name, { maxLength: MAX_NAME });
  const out = redacted === name ? name : cutWithHash(redacted, name, MAX_NAME);
  if (name.length <= MAX_NAME) {
    if (names.size >= MAX_CACHED) names.clear();
    names.set(name, out);
  }
  return out;
}
