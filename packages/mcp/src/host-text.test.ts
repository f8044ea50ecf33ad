import { redact } from "@governor/core/judge";
import { describe, expect, it } from "vitest";
import { transportErrorText } from "./host-text.ts";

const SECRET = `sk-live-${"A1b2C3d4".repeat(3)}`;
const late = (id: unknown) =>
  `Received a response for an unknown message ID: ${JSON.stringify({
    result: { content: [{ type: "text", text: `quarterly numbers, key ${SECRET}` }] },
    jsonrpc: "2.0",
    id,
  })}`;

describe("transportErrorText", () => {
  it("issue 9.4: a late answer is reduced to its request id; the body and the raw error stay out", () => {
    expect(transportErrorText(late(7), redact)).toEqual({
      message:
        "An answer to request 7 arrived after the request ended (timed out or cancelled); dropped",
      keepCause: false,
    });
    expect(transportErrorText(late("req-9"), redact).message).toContain('request "req-9"');
  });

  it("issue 9.4: an id that is itself a payload (long, odd characters) or a body that is not JSON is not quoted", () => {
    for (const id of [`x ${SECRET}`, "y".repeat(65), { nested: SECRET }]) {
      const text = transportErrorText(late(id), redact);
      expect(text.message).toContain("request (no id)");
      expect(text.message).not.toContain(SECRET);
    }
    const broken = `Received a response for an unknown message ID: {"id": 3, "result": "${SECRET}`;
    expect(transportErrorText(broken, redact).message).not.toContain(SECRET);
  });

  it("issue 9.4: the SDK's other reports quoting a whole message are reduced too", () => {
    const quoted = JSON.stringify({ method: "x", params: { secret: SECRET } });
    for (const prefix of [
      "Received a progress notification for an unknown token: ",
      "Unknown message type: ",
    ]) {
      const text = transportErrorText(`${prefix}${quoted}`, redact);
      expect(text.keepCause).toBe(false);
      expect(text.message).not.toContain(SECRET);
      expect(text.message).toMatch(/; dropped$/);
    }
  });

  it("issue 9.4: any other report is redacted and keeps its raw error", () => {
    const text = transportErrorText(
      `SSE stream disconnected: 401 for https://bob:hunter22@api.internal.example/mcp (${SECRET})`,
      redact,
    );
    expect(text.keepCause).toBe(true);
    expect(text.message).toMatch(/^SSE stream disconnected: 401 for /);
    expect(text.message).not.toMatch(/hunter22|sk-live-/);
  });
});
