/** The placeholders redaction writes in place of what it removes (docs/architecture.md §5). */
export const REDACTED = "[redacted]";
export const TOKEN = "[token]";
export const PATH = "[path]";
export const URL_PLACEHOLDER = "[url]";
export const IP = "[ip]";
export const HOST = "[host]";
export const EMAIL = "[email]";

/** The placeholders above, and `…` (a capped output). */
const PLACEHOLDERS = /\[(?:redacted|token|path|url|ip|host|email)\]|…/g;

/**
 * Whether a value is made of placeholders, `…` and punctuation only: redacting it again would
 * change nothing but the punctuation.
 */
export function isInert(value: unknown): boolean {
  return typeof value === "string" && !/[A-Za-z0-9]/.test(value.replace(PLACEHOLDERS, ""));
}
