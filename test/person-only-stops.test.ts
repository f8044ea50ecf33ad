/**
 * Issue 27.3, "done means": a missing permission scope and a business-rule refusal that names who
 * can help stop at their first call, through the real SDK client over stdio and Streamable HTTP
 * and the MCP adapter (before: read as argument errors, three calls each until
 * `repeated_failure`). The texts are phrasings written for this test, not taken from any corpus.
 */
import { afterAll, describe, expect, it } from "vitest";
import { endpointPair, TRANSPORTS, tempDir } from "./mcp-support.ts";

const SCOPE = "The token is missing the `notes:write` scope. Ask a workspace admin to grant it.";
const SCOPE_2 = "This action needs the 'admin:org' scope; an administrator has to approve the app.";
const REFUSAL =
  "Notes older than 30 days cannot be changed. Contact the records team to request an exception.";
const REFUSAL_2 =
  "Refunds above 500 EUR are handled by finance. Please reach out to your account manager.";

const thrice = (text: string) => [1, 2, 3].map(() => ({ kind: "error" as const, text }));

describe.each(TRANSPORTS)("person-only failures over %s", (kind) => {
  const tmp = tempDir();
  const pair = endpointPair(kind, {
    effectsFile: tmp.file(`effects-${kind}.jsonl`),
    scenario: {
      search_notes: [...thrice(SCOPE)],
      get_note: [...thrice(SCOPE_2)],
      append_log: [...thrice(REFUSAL)],
      create_note: [...thrice(REFUSAL_2)],
    },
  });
  afterAll(() => tmp.cleanup());

  it.each([
    ["search_notes", { query: "q" }, "forbidden"],
    ["get_note", { id: "welcome" }, "forbidden"],
    ["append_log", { line: "hello" }, "person_required"],
    ["create_note", { title: "t", body: "b" }, "person_required"],
  ] as const)("%s stops at its first call (%s)", async (name, args, reason) => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, { name, arguments: { ...args } });
    expect(outcome).toMatchObject({ kind: "stop", reason });
    expect(run.summary()).toMatchObject({ attempts: 1, reason });
    expect(run.ended).toBe(true);
    // A person can act on it: the stop says so.
    expect(outcome.kind === "stop" && outcome.personResolvable).toBe(true);
  });
});
