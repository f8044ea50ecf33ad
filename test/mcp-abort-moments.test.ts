/**
 * The host's abort (the call's own signal) at every moment of a write through `governClient`,
 * over real stdio and Streamable HTTP with both SDK generations: before the request is sent,
 * while the server holds it after committing, and in the same turn as the answer (just after the
 * SDK took it in, and just before). Then the host sends the same logical call again in a new run
 * of the same idempotency scope. Whatever the moment, the write happens once and never silently
 * not at all: a call cut before sending runs the next time; a call that reached the server is
 * refused (an unkeyed write, which may have happened) or deduplicated by the server (a write whose
 * tool honours its key).
 */
import { readEffects } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import { openPerTest, SDKS, TRANSPORTS } from "./mcp-support.ts";

type Moment =
  | "before sending"
  | "while the server holds it"
  | "just after the answer"
  | "just before the answer";
const MOMENTS: readonly Moment[] = [
  "before sending",
  "while the server holds it",
  "just after the answer",
  "just before the answer",
];

/** An unkeyed write, and one whose tool honours its idempotency key (the test policy's). */
const WRITES = [
  { tool: "append_log", args: { line: "once" }, keyed: false },
  { tool: "create_note", args: { title: "once", body: "b" }, keyed: true },
] as const;

/** A message carrying a tool's answer (not a listing's). */
function isToolAnswer(message: unknown): boolean {
  const result = (message as { result?: unknown } | null)?.result;
  return typeof result === "object" && result !== null && "content" in result;
}

describe.each(SDKS)("%s", (sdk) => {
  const open = openPerTest({ sdk });
  describe.each(TRANSPORTS)("over %s", (kind) => {
    describe.each(WRITES)("$tool", ({ tool, args, keyed }) => {
      it.each(MOMENTS)(
        "the host aborts %s",
        async (moment) => {
          const holds = moment === "while the server holds it";
          const { g, effectsFile } = await open(
            kind,
            holds ? { scenario: { [tool]: [{ kind: "hang_after_commit", ms: 1_500 }] } } : {},
          );
          const abort = new AbortController();
          // The answer's moment: the abort lands in the same turn as the SDK reading it.
          const transport = g.client.transport as {
            onmessage?: (message: unknown, extra?: unknown) => void;
          };
          const deliver = transport.onmessage;
          transport.onmessage = (message, extra) => {
            if (isToolAnswer(message) && moment === "just before the answer") abort.abort();
            deliver?.call(transport, message, extra);
            if (isToolAnswer(message) && moment === "just after the answer") abort.abort();
          };
          if (moment === "before sending") abort.abort();
          const effects = () => readEffects(effectsFile).filter((e) => e.tool === tool).length;
          // While the server holds it: once its effect is written (a fixed delay raced a slow
          // child on a loaded machine, and the abort then came before the commit).
          if (holds) {
            void (async () => {
              for (let i = 0; i < 500 && effects() === 0; i++) {
                await new Promise((resolve) => setTimeout(resolve, 10));
              }
              abort.abort();
            })();
          }
          const call = { name: tool, arguments: args, callId: "call-1" };

          const first = g.governor.startRun({ idempotencyScope: "job-1" });
          const cut = await g.governed.callTool(first, { ...call, signal: abort.signal });
          first.end();
          expect(cut).toMatchObject({ kind: "stop", reason: "aborted" });
          const sent = moment !== "before sending";
          expect(effects()).toBe(sent ? 1 : 0);

          const again = await g.governed.callTool(
            g.governor.startRun({ idempotencyScope: "job-1" }),
            call,
          );
          if (!sent || keyed) expect(again).toMatchObject({ kind: "ok" });
          else expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
          // The write held by the server ends its hold before the file is read.
          if (holds) await new Promise((resolve) => setTimeout(resolve, 1_300));
          expect(effects()).toBe(1);
        },
        20_000,
      );
    });
  });
});
