import { describe, expect, it } from "vitest";
import { createGovernor } from "../run/governor.ts";
import { eventLine } from "./event-limits.ts";
import { parseEvents } from "./event-log.ts";
import type { DecisionEvent, GovernorEvent } from "./events.ts";

const TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

function failing(text: string) {
  return async () => ({ isError: true, content: [{ type: "text", text }] });
}

async function eventsOf(
  run: (r: ReturnType<ReturnType<typeof createGovernor>["startRun"]>) => Promise<void>,
  policy = {},
  deadline?: number,
): Promise<GovernorEvent[]> {
  const events: GovernorEvent[] = [];
  const governor = createGovernor(policy, {
    random: () => 0.5,
    metrics: false,
    onEvent: (e) => events.push(e),
  });
  const r = governor.startRun(deadline === undefined ? {} : { deadline });
  await run(r);
  r.end();
  return events;
}

const decisions = (events: GovernorEvent[]) =>
  events.filter((e): e is DecisionEvent => e.type === "decision");

describe("decision events carry what replay needs", () => {
  it("numbers calls, hashes identical calls alike, keeps the failure's signals, redacted", async () => {
    const events = await eventsOf(
      async (run) => {
        const fail = failing(`Invalid argument: limit must be between 1 and 50 (token ${TOKEN})`);
        await run.call({ tool: "search", args: { limit: 500 } }, fail);
        await run.call({ tool: "search", args: { limit: 500 } }, fail);
        await run.call({ tool: "search", args: { limit: 5 } }, async () => ({ ok: true }));
      },
      { defaults: { effect: "read_only" } },
    );
    const [first, second] = decisions(events);
    expect(first?.call).toBe(1);
    expect(second?.call).toBe(2);
    expect(first?.input?.callHash).toMatch(/^[0-9a-f]{16}$/);
    expect(second?.input?.callHash).toBe(first?.input?.callHash);
    const calls = events.filter((e) => e.type === "call");
    expect(calls.map((c) => c.call)).toEqual([1, 2, 3]);
    const failure = first?.input?.failure;
    expect(failure).toMatchObject({ channel: "tool", origin: "peer", redacted: true });
    expect(failure?.text).toContain("limit must be between 1 and 50");
    expect(failure?.text).not.toContain(TOKEN);
    expect(JSON.stringify(events)).not.toContain(TOKEN);
    expect(first?.input?.elapsedMs).toBeGreaterThanOrEqual(0);
  });

  it("redacts and caps a tool's own error code and failure metadata, keeps a plain code as is", async () => {
    const secretCode = `auth failed for postgres://admin:hunter2hunter2@10.0.0.5/db ${TOKEN}`;
    const events = await eventsOf(
      async (run) => {
        await run.call({ tool: "query" }, async () => ({
          isError: true,
          content: [{ type: "text", text: "query failed" }],
          structuredContent: { error: { code: secretCode } },
          _meta: {
            "io.modelcontextprotocol/toolFailure": { class: "x".repeat(5_000), code: TOKEN },
          },
        }));
        await run.call({ tool: "save" }, async () => ({
          isError: true,
          content: [{ type: "text", text: "duplicate key" }],
          structuredContent: { error: { code: "23505" } },
          _meta: { "io.modelcontextprotocol/toolFailure": { class: "conflict", code: "E_DUP" } },
        }));
      },
      { defaults: { effect: "read_only" } },
    );
    const [secret, plain] = decisions(events).map((d) => d.input?.failure);
    const line = JSON.stringify(secret);
    for (const raw of [TOKEN, "hunter2hunter2", "10.0.0.5"]) expect(line).not.toContain(raw);
    expect(line.length).toBeLessThan(1_000);
    expect(secret).toMatchObject({ redacted: true });
    expect(plain).toMatchObject({
      code: "23505",
      toolFailure: { class: "conflict", code: "E_DUP" },
    });
    expect(plain?.redacted).toBeUndefined();
  });

  it("keeps only the effect hints of annotations, the host's deadline, the HTTP status", async () => {
    const deadline = Date.now() + 60_000;
    const events = await eventsOf(
      async (run) => {
        await run.call(
          {
            tool: "fetch",
            annotations: { readOnlyHint: true, title: "Fetch a page" } as never,
          },
          async () => ({
            isError: true,
            content: [{ type: "text", text: "busy" }],
            structuredContent: { error: { status: 503 } },
          }),
        );
      },
      { defaults: { retry: { attempts: 1 } } },
      deadline,
    );
    const input = decisions(events)[0]?.input;
    expect(input?.annotations).toEqual({ readOnlyHint: true });
    expect(input?.failure.httpStatus).toBe(503);
    expect(input?.failure.redacted).toBeUndefined();
    expect(input?.hostDeadlineMs).toBeGreaterThan(50_000);
    expect(input?.hostDeadlineMs).toBeLessThanOrEqual(60_000);
  });

  it("writes lines that read back as the same events; lines without the new fields still read", async () => {
    const events = await eventsOf(async (run) => {
      await run.call({ tool: "get_note", args: { id: "x" } }, failing('No note with id "x"'));
    });
    const text = events.map((e) => eventLine(e, 16_384)).join("\n");
    const parsed = parseEvents(text);
    expect(parsed.errors).toEqual([]);
    expect(parsed.events).toEqual(events);
    const older = events.map((e) => {
      const { call: _call, ...rest } = e as GovernorEvent & { call?: number; input?: unknown };
      const { input: _input, ...plain } = rest as typeof rest & { input?: unknown };
      return JSON.stringify(plain);
    });
    const read = parseEvents(older.join("\n"));
    expect(read.errors).toEqual([]);
    expect(read.events).toHaveLength(events.length);
    expect(read.events.some((e) => "input" in e)).toBe(false);
  });

  it("keeps an argument by which the call breaks its schema, and reads it back", async () => {
    const events = await eventsOf(async (run) => {
      await run.call(
        {
          tool: "add_row",
          args: { table: "orders" },
          inputSchema: {
            type: "object",
            properties: { table: { type: "string" }, row: { type: "object" } },
            required: ["table", "row"],
          },
        },
        failing("Invalid input"),
      );
    });
    expect(decisions(events)[0]?.input?.evidence).toEqual({
      argument: { name: "row", by: "schema" },
      targets: "none",
    });
    const parsed = parseEvents(events.map((e) => eventLine(e, 16_384)).join("\n"));
    expect(parsed.errors).toEqual([]);
    expect(parsed.events).toEqual(events);
  });
});
