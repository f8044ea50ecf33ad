import { describe, expect, it } from "vitest";
import {
  type AgentRuntime,
  type AgentTask,
  editDistance,
  react,
  runTask,
  type ToolRequest,
  type TurnResult,
} from "./agent.ts";
import { leaksSecrets, resultText, thrownText } from "./agent-runtimes.ts";
import { FAULT_TOOL_NAMES } from "./fault-server.ts";
import { crashMessage, fixtureSecrets } from "./secrets.ts";

const tools = [...FAULT_TOOL_NAMES];

describe("react", () => {
  it("picks a known id the failure lists, other than the one that failed", () => {
    const request: ToolRequest = { name: "get_note", arguments: { id: "drafts" } };
    const reaction = react(request, 'No note with id "drafts". Known ids: welcome, release-notes', {
      tools,
    });
    expect(reaction).toEqual({
      rule: "pick_known_id",
      next: { name: "get_note", arguments: { id: "welcome" } },
    });
  });

  it("reads Governor's wording of the same failure too", () => {
    const text =
      'get_note: No note with id "drafts". Known ids: welcome, release-notes. Use an identifier that exists; look it up first if unsure.';
    expect(react({ name: "get_note", arguments: { id: "drafts" } }, text, { tools }).next).toEqual({
      name: "get_note",
      arguments: { id: "welcome" },
    });
  });

  it("puts the value into the argument the text quotes", () => {
    const reaction = react(
      { name: "open", arguments: { id: "1", folder: "tmp" } },
      'No folder "tmp". Use one of: inbox, archive',
      { tools },
    );
    expect(reaction.next.arguments).toEqual({ id: "1", folder: "inbox" });
  });

  it("clamps a numeric argument into the range the failure names", () => {
    const reaction = react(
      { name: "search_notes", arguments: { query: "release", limit: 500 } },
      "Invalid argument: limit must be between 1 and 50",
      { tools },
    );
    expect(reaction).toEqual({
      rule: "clamp_to_range",
      next: { name: "search_notes", arguments: { query: "release", limit: 50 } },
    });
    const below = react(
      { name: "search_notes", arguments: { query: "x", limit: 0 } },
      "limit must be between 1 and 50",
      { tools },
    );
    expect(below.next.arguments).toEqual({ query: "x", limit: 1 });
  });

  it("switches to a listed tool the text names, with the task's arguments for it", () => {
    const reaction = react(
      { name: "crash_with_stack", arguments: {} },
      "crash_with_stack: it failed. Use search_notes instead.",
      { tools, switchArgs: { search_notes: { query: "release" } } },
    );
    expect(reaction).toEqual({
      rule: "switch_named_tool",
      next: { name: "search_notes", arguments: { query: "release" } },
    });
  });

  it("takes the first listed tool of several, and ignores tools that are not listed", () => {
    const text = "Use web_search or get_note instead.";
    expect(react({ name: "x", arguments: { id: "a" } }, text, { tools }).next.name).toBe(
      "get_note",
    );
    expect(react({ name: "x", arguments: {} }, "Use web_search instead.", { tools }).rule).toBe(
      "repeat",
    );
  });

  it("picks the closest listed tool when the tool does not exist", () => {
    const sdk = react(
      { name: "get_notes", arguments: { id: "welcome" } },
      "MCP error -32602: Tool get_notes not found",
      { tools },
    );
    expect(sdk).toEqual({
      rule: "closest_tool",
      next: { name: "get_note", arguments: { id: "welcome" } },
    });
    const governed = react(
      { name: "get_notes", arguments: { id: "welcome" } },
      "get_notes: Tool get_notes not found. This tool does not exist. Choose another tool.",
      { tools },
    );
    expect(governed.next.name).toBe("get_note");
  });

  it("does not switch to a tool whose name is far from the one asked for", () => {
    const reaction = react(
      { name: "launch_rocket", arguments: {} },
      "Tool launch_rocket not found",
      { tools },
    );
    expect(reaction.rule).toBe("repeat");
  });

  it("repeats the same call when nothing in the text says what to change", () => {
    const request: ToolRequest = { name: "delete_account", arguments: { id: "acct-42" } };
    for (const text of [
      "Permission denied: the API token lacks the accounts:delete scope",
      "503 Service Unavailable",
      "MCP error -32000: Connection closed",
      crashMessage(),
    ]) {
      expect(react(request, text, { tools })).toEqual({ rule: "repeat", next: request });
    }
  });

  it("does not pick the value that already failed, nor clamp a value already in range", () => {
    const request: ToolRequest = { name: "get_note", arguments: { id: "welcome" } };
    expect(react(request, "Known ids: welcome", { tools }).rule).toBe("repeat");
    const inRange: ToolRequest = { name: "search_notes", arguments: { query: "q", limit: 10 } };
    expect(react(inRange, "limit must be between 1 and 50", { tools }).rule).toBe("repeat");
  });
});

describe("editDistance", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("get_notes", "get_note")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("same", "same")).toBe(0);
  });
});

/** A runtime that answers from a script and records the calls it got. */
function scripted(results: TurnResult[]): AgentRuntime & { calls: ToolRequest[]; ended: number } {
  const calls: ToolRequest[] = [];
  const self = {
    calls,
    ended: 0,
    startTask: () => ({
      call: async (request: ToolRequest): Promise<TurnResult> => {
        calls.push(request);
        return results.shift() ?? { kind: "result", observation: { isError: true, text: "again" } };
      },
      end: () => {
        self.ended += 1;
      },
    }),
  };
  return self;
}

const task: AgentTask = {
  id: "t",
  title: "test",
  first: { name: "get_note", arguments: { id: "drafts" } },
};

describe("runTask", () => {
  it("corrects, then succeeds at the first usable result", async () => {
    const runtime = scripted([
      { kind: "result", observation: { isError: true, text: "Known ids: welcome" } },
      { kind: "result", observation: { isError: false, text: "# Welcome" } },
    ]);
    const record = await runTask(task, runtime, { tools });
    expect(record.outcome).toEqual({ kind: "succeeded" });
    expect(runtime.calls.map((c) => c.arguments.id)).toEqual(["drafts", "welcome"]);
    expect(record.turns.map((t) => t.reaction)).toEqual(["pick_known_id", undefined]);
    expect(runtime.ended).toBe(1);
  });

  it("repeats until the turn limit when nothing can be fixed", async () => {
    const runtime = scripted([]);
    const record = await runTask(task, runtime, { tools, maxTurns: 4 });
    expect(record.outcome).toEqual({ kind: "turn_limit" });
    expect(runtime.calls).toHaveLength(4);
    expect(record.turns.at(-1)?.reaction).toBeUndefined();
  });

  it("ends the task when the runtime stops it", async () => {
    const runtime = scripted([
      { kind: "stop", reason: "forbidden", observation: { isError: true, text: "stop" } },
    ]);
    const record = await runTask(task, runtime, { tools });
    expect(record.outcome).toEqual({ kind: "stopped", reason: "forbidden" });
    expect(runtime.calls).toHaveLength(1);
    expect(runtime.ended).toBe(1);
  });
});

describe("leaksSecrets", () => {
  it("finds every fixture secret and stack frames, not ordinary text", () => {
    for (const secret of fixtureSecrets()) expect(leaksSecrets(`error: ${secret}`)).toBe(true);
    expect(leaksSecrets("Error: boom\n    at run (/srv/app/lib/run.js:10:5)")).toBe(true);
    expect(leaksSecrets("Error: boom\n    at file:///srv/app/x.mjs:1:2")).toBe(true);
    expect(leaksSecrets('No note with id "drafts". Known ids: welcome, release-notes')).toBe(false);
    expect(leaksSecrets("look at the notes at 10:30")).toBe(false);
  });
});

describe("resultText / thrownText", () => {
  it("joins text blocks and takes an error's message", () => {
    expect(
      resultText({
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(thrownText(new Error("MCP error -32000: Connection closed"))).toBe(
      "MCP error -32000: Connection closed",
    );
    expect(thrownText("x")).toBe("x");
  });
});
