import { describe, expect, it } from "vitest";
import { failureFromError, failureFromResult } from "./failure.ts";
import { retryHintInText } from "./text-hint.ts";

const NOW = Date.parse("2025-03-15T09:12:00.000Z");

describe("retryHintInText: a retry hint written into the error text", () => {
  it("reads Go-style durations (OpenAI-style upstream bodies that MCP servers pass on; not a corpus text, which would take its server out of `pnpm eval`'s held-out set)", () => {
    const body = (d: string) =>
      `upstream API error: 429
{"error":{"message":"Rate limit reached for requests. Please try again in ${d}.","code":"rate_limit_exceeded"}}`;
    expect(retryHintInText(body("20s"), NOW)).toBe(20_000);
    expect(retryHintInText(body("1m30s"), NOW)).toBe(90_000);
    expect(retryHintInText(body("2m0.5s"), NOW)).toBe(120_500);
    expect(retryHintInText("Rate limit reached. Please try again in 250ms.", NOW)).toBe(250);
  });

  it("reads a number and a unit word", () => {
    expect(retryHintInText("Too many requests, retry after 3 seconds", NOW)).toBe(3000);
    expect(retryHintInText("Quota hit. Try again in 2 minutes.", NOW)).toBe(120_000);
    expect(retryHintInText("try again in 1 hour", NOW)).toBe(3_600_000);
    expect(retryHintInText("Please retry in 5min", NOW)).toBe(300_000);
  });

  it("reads an ISO instant (taylorwilsdon/google_workspace_mcp passing Gmail's text on)", () => {
    const gmail =
      'API error in send_gmail_message: <HttpError 429 when requesting https://gmail.googleapis.com/gmail/v1/users/me/messages/send?alt=json returned "User-rate limit exceeded.  Retry after 2025-03-15T09:12:44.123Z (Mail sending)">';
    expect(retryHintInText(gmail, NOW)).toBe(44_123);
    // An instant already past: retry now, as an HTTP Retry-After date in the past.
    expect(retryHintInText(gmail, NOW + 3_600_000)).toBe(0);
  });

  it("gives nothing for texts without a duration", () => {
    for (const text of [
      "Rate limit exceeded. Please try again after sometime.",
      "The lock is held; retry after a short wait.",
      "retry after 2 attempts failed",
      "Invalid date format; expected YYYY-MM-DD",
      "retry after 30",
      "",
    ]) {
      expect(retryHintInText(text, NOW), text).toBeUndefined();
    }
  });

  it("feeds failureFromResult and failureFromError when no field or header gives a hint", () => {
    const result = failureFromResult(
      { isError: true, content: [{ type: "text", text: "429: rate limited, try again in 20s" }] },
      NOW,
    );
    expect(result.retryAfterMs).toBe(20_000);
    // A structured hint wins over the text.
    const structured = failureFromResult(
      {
        isError: true,
        content: [{ type: "text", text: "429: rate limited, try again in 20s" }],
        structuredContent: { error: { retryAfterMs: 1500 } },
      },
      NOW,
    );
    expect(structured.retryAfterMs).toBe(1500);
    expect(
      failureFromError(new Error("busy, retry after 2 seconds"), { now: NOW }).retryAfterMs,
    ).toBe(2000);
  });
});

describe("retryHintInText remembers only whether a text mentions a retry, never the hint", () => {
  it("answers a text judged again the same, and a date against each call's clock", () => {
    const at = "Quota exceeded. Retry after 2025-03-15T09:13:00Z";
    const texts = ["Quota hit. Try again in 2 minutes.", "HTTP 500 internal error", at];
    const first = texts.map((t) => retryHintInText(t, NOW));
    expect(first).toEqual([120_000, undefined, 60_000]);
    for (let round = 0; round < 3; round++) {
      expect(texts.map((t) => retryHintInText(t, NOW))).toEqual(first);
      // The same remembered text, read later: the date is that much nearer.
      expect(retryHintInText(at, NOW + 15_000 * (round + 1))).toBe(60_000 - 15_000 * (round + 1));
    }
  });
});
