/**
 * A correction that names nothing the model could change in a write stops a `mutating` tool at its
 * first call with a text a person can read (`person_required`, the decision's asymmetry of harm,
 * `stopsGuessedWrite`), through the real SDK client over stdio and Streamable HTTP and the MCP
 * adapter: a conflict read from a bare status or word (`bareConflict`), a correction a built-in
 * rule read that the learned text model disputes (`disputedByModel`), and one read from a text
 * that refuses the operation as a whole (`wholeOperation`), and one whose text names nothing of the
 * call, no property of the tool's schema and no value it sent (`unbackedByCall`). A read answered
 * the same is still sent back to the model, and so is a write whose text the mark does not fit and
 * names one of its arguments. The texts are written for this test.
 */
import { afterAll, describe, expect, it } from "vitest";
import { endpointPair, TRANSPORTS, tempDir } from "./mcp-support.ts";

interface Case {
  /** The mark the stopping text carries. */
  readonly mark: string;
  /** A text the mark stops a write on. */
  readonly stops: string;
  /** A text of the same reason the mark does not fit: a write answered with it goes back. */
  readonly goesBack: string;
  /** The arguments of the write answered with `goesBack`: the text names one of them. */
  readonly goesBackArgs: Record<string, unknown>;
  /** What the mark's absence leaves (how `goesBack` is read, too). */
  readonly reason: string;
  /** An idempotent write's text, if the case has one: it goes back to the model as a read does. */
  readonly idempotent?: string;
}

const CASES: readonly Case[] = [
  {
    mark: "bareConflict",
    stops: "Request failed with status code 409",
    goesBack: "409 Conflict: a log line 'weekly' already exists",
    goesBackArgs: { line: "weekly" },
    reason: "conflict",
    idempotent: "HTTP 412 Precondition Failed",
  },
  {
    mark: "disputedByModel",
    stops: "Invalid TenantAccessToken for this workspace",
    goesBack: "The line must be lowercase",
    goesBackArgs: { line: "Hello" },
    reason: "invalid_argument",
  },
  {
    mark: "wholeOperation",
    stops: "Request failed with status code 400: a review hook prevented the operation.",
    goesBack: "Request failed with status code 400: line is required for this operation.",
    goesBackArgs: {},
    reason: "invalid_argument",
  },
  {
    mark: "unbackedByCall",
    stops: "Validation failed: the value must be one of the allowed options",
    goesBack: "Validation failed: line must be one of the allowed options",
    goesBackArgs: { line: "hello" },
    reason: "invalid_argument",
  },
];

const thrice = (text: string) => [1, 2, 3].map(() => ({ kind: "error" as const, text }));

describe.each(CASES.flatMap((c) => TRANSPORTS.map((kind) => [c.mark, kind, c] as const)))(
  "%s over %s",
  (_mark, kind, c) => {
    const tmp = tempDir();
    const pair = endpointPair(kind, {
      effectsFile: tmp.file(`effects-${kind}.jsonl`),
      scenario: {
        create_note: [...thrice(c.stops)],
        append_log: [...thrice(c.goesBack)],
        search_notes: [...thrice(c.stops)],
        ...(c.idempotent !== undefined && { set_status: [...thrice(c.idempotent)] }),
      },
    });
    afterAll(() => tmp.cleanup());

    /** Calls `name` once in a new run; the run and what the model reads. */
    async function callOnce(name: string, args: Record<string, unknown>) {
      pair.g.reset();
      const run = pair.g.governor.startRun();
      const outcome = await pair.g.governed.callTool(run, { name, arguments: args });
      return { run, outcome };
    }

    it("create_note, a write, stops at its first call", async () => {
      const { run, outcome } = await callOnce("create_note", { title: "t", body: "b" });
      expect(outcome).toMatchObject({ kind: "stop", reason: "person_required" });
      expect(run.summary()).toMatchObject({ attempts: 1, reason: "person_required" });
      expect(outcome.kind === "stop" && outcome.personResolvable).toBe(true);
    });

    const back: [string, string, Record<string, unknown>][] = [
      ["search_notes", "a read", { query: "q" }],
      ["append_log", "a write the mark does not fit (the text names its argument)", c.goesBackArgs],
    ];
    if (c.idempotent !== undefined) {
      back.push(["set_status", "an idempotent write", { id: "welcome", status: "published" }]);
    }
    it.each(back)("%s, %s, goes back to the model", async (name, _what, args) => {
      const { run, outcome } = await callOnce(name, args);
      expect(outcome).toMatchObject({
        kind: "model",
        action: "correct_arguments",
        reason: c.reason,
      });
      expect(run.ended).toBe(false);
    });
  },
);
