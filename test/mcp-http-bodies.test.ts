/**
 * An HTTP error page is what many servers answer before any JSON-RPC: a framework's debug page
 * with a stack trace, the file paths, a connection string and a token. Over real Streamable HTTP
 * with both SDK generations (which quote the body in the error they throw), the model reads a
 * status line at most, never the page, and what reaches the host is redacted.
 */
import { describe, expect, it } from "vitest";
import { modelText, openPerTest, SDKS } from "./mcp-support.ts";

const PAGE = `<html><body><h1>Internal Server Error</h1><pre>Traceback (most recent call last):
  File "/srv/app/handlers/notes.py", line 42, in get_note
    conn = psycopg2.connect("postgresql://admin:S3cretPw@db-prod-7.internal:5432/notes")
OperationalError: could not connect; token=sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0
</pre></body></html>`;

/** Anything of the page beyond its status. */
const PAGE_PARTS = /Traceback|psycopg|S3cretPw|sk-live|\/srv\/app|db-prod|notes\.py|Operational/;
/** What must never reach the host either (redaction). */
const SECRETS = /S3cretPw|sk-live-4f9a|\/srv\/app/;

/** Each status on a read and on a write, with the stop it must come to. */
const CASES = [
  { status: 500, tool: "get_note", reason: "retries_exhausted" },
  { status: 500, tool: "append_log", reason: "uncertain_mutation" },
  { status: 502, tool: "append_log", reason: "uncertain_mutation" },
  { status: 400, tool: "get_note", reason: "transport_error" },
  { status: 401, tool: "append_log", reason: "unauthorized" },
  { status: 429, tool: "get_note", reason: "retries_exhausted" },
] as const;

describe.each(SDKS)("%s over Streamable HTTP", (sdk) => {
  const open = openPerTest({ sdk, effects: false });

  it.each(CASES)(
    "HTTP $status with a debug page, $tool: $reason, the page never reaches the model",
    async ({ status, tool, reason }) => {
      const { g } = await open("http", { httpFaults: [{ status, body: PAGE, tool, times: 5 }] });
      const run = g.governor.startRun();
      const args = tool === "get_note" ? { id: "welcome" } : { line: "x" };
      const outcome = await g.governed.callTool(run, { name: tool, arguments: args });
      expect(outcome).toMatchObject({ kind: "stop", reason });
      expect(modelText(outcome)).not.toMatch(PAGE_PARTS);
      for (const error of [...g.seen.hostErrors, ...g.seen.transportErrors]) {
        expect(error.message).not.toMatch(SECRETS);
      }
    },
  );
});
