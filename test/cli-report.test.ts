import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { appendFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import {
  createGovernor,
  createJsonlSink,
  type GovernorEvent,
  parseEvents,
  type Report,
  summarizeEvents,
} from "@governor/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governor, governorProcess } from "./cli.ts";

const actions = { correct_arguments: 0, retry_dependency: 0, switch_tool: 0, stop: 0, host: 0 };
const at = Date.UTC(2025, 0, 1);

/** Two runs: one retries `search` and completes, one repeats a `pay` failure until it stops. */
const events: GovernorEvent[] = [
  {
    v: 1,
    type: "decision",
    at,
    runId: "r1",
    tool: "search",
    server: "web",
    attempt: 1,
    action: "retry_dependency",
    reason: "unavailable",
    certainty: "failed",
    fingerprint: "1111111111111111",
    delayMs: 200,
    observed: false,
  },
  {
    v: 1,
    type: "call",
    at: at + 300,
    runId: "r1",
    tool: "search",
    server: "web",
    outcome: "ok",
    attempts: 2,
    durationMs: 300,
  },
  {
    v: 1,
    type: "run_end",
    at: at + 400,
    runId: "r1",
    summary: {
      runId: "r1",
      reason: "completed",
      personResolvable: false,
      calls: 1,
      attempts: 2,
      actions: { ...actions, retry_dependency: 1 },
      retries: 1,
      failures: 1,
      fingerprints: { "1111111111111111": 1 },
      durationMs: 400,
      observeOnly: false,
    },
  },
  ...[1, 2, 3].flatMap((attempt): GovernorEvent[] => [
    {
      v: 1,
      type: "decision",
      at: at + 1_000 * attempt,
      runId: "r2",
      tool: "pay",
      attempt: 1,
      action: attempt < 3 ? "correct_arguments" : "stop",
      reason: attempt < 3 ? "business_rule" : "repeated_failure",
      ...(attempt < 3 ? {} : { cause: "business_rule" as const }),
      certainty: "failed",
      fingerprint: "2222222222222222",
      observed: false,
    },
    {
      v: 1,
      type: "call",
      at: at + 1_000 * attempt + 10,
      runId: "r2",
      tool: "pay",
      outcome: attempt < 3 ? "model" : "stop",
      attempts: 1,
      durationMs: 10,
    },
  ]),
  {
    v: 1,
    type: "run_end",
    at: at + 4_000,
    runId: "r2",
    summary: {
      runId: "r2",
      reason: "repeated_failure",
      personResolvable: false,
      calls: 3,
      attempts: 3,
      actions: { ...actions, correct_arguments: 2, stop: 1 },
      retries: 0,
      failures: 3,
      fingerprints: { "2222222222222222": 3 },
      durationMs: 4_000,
      lastFailure: { tool: "pay", reason: "business_rule", text: "card declined" },
      observeOnly: false,
    },
  },
];

describe("governor report", () => {
  let dir: string;
  let log: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "governor-report-"));
    log = join(dir, "events.jsonl");
    const sink = createJsonlSink(log);
    for (const event of events) sink.write(event);
    await sink.close();
    expect(sink.lastError).toBeUndefined();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("--json prints one JSON object: the report of the log", async () => {
    const { status, stdout, stderr } = await governor(["report", log, "--json"]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    expect(stdout.trim().split("\n")).toHaveLength(1);
    const report = JSON.parse(stdout) as Report;
    expect(report).toEqual(summarizeEvents(events));
    expect(report).toMatchObject({
      runs: 2,
      openRuns: 0,
      stoppedBy: { completed: 1, repeated_failure: 1 },
      calls: { total: 4, wasted: 3 },
      retries: { total: 1, byTool: { search: 1 } },
    });
    expect(report.topFingerprints[0]).toMatchObject({
      fingerprint: "2222222222222222",
      count: 3,
      tools: ["pay"],
      reasons: ["business_rule"],
    });
  });

  it("prints a table by default", async () => {
    const { status, stdout } = await governor(["report", log]);
    expect(status).toBe(0);
    expect(stdout).toContain("Runs: 2 ended, 0 without an end in the log");
    expect(stdout).toMatch(/repeated_failure\s+1\s+50%/);
    expect(stdout).toContain("Tool calls: 4, wasted 3 (75%");
    expect(stdout).toMatch(
      /2222222222222222\s+3\s+1\s+pay\s+business_rule\s+correct_arguments,stop/,
    );
  });

  it("reports bad lines on stderr, exits 1, and still summarizes the valid lines", async () => {
    const bad = join(dir, "bad.jsonl");
    const lines = events.map((e) => JSON.stringify(e));
    lines.splice(1, 0, "{oops", JSON.stringify({ ...events[0], v: 7 }));
    lines.push(JSON.stringify({ ...events[1], attempts: "two" }));
    await appendFile(bad, `${lines.join("\n")}\n`);

    const { status, stdout, stderr } = await governor(["report", bad, "--json"]);
    expect(status).toBe(1);
    const messages = stderr.trim().split("\n");
    expect(messages).toHaveLength(3);
    expect(messages[0]).toMatch(/bad\.jsonl: line 2: not JSON/);
    expect(messages[1]).toContain("line 3: unsupported event version 7 (this reader knows 1)");
    expect(messages[2]).toMatch(/line 13: attempts: /);
    expect(JSON.parse(stdout)).toEqual(summarizeEvents(events));
  });

  it("reads stdin with -, and rejects a missing file argument", async () => {
    const text = events.map((e) => `${JSON.stringify(e)}\n`).join("");
    const piped = await governor(["report", "-", "--json", "--top", "1"], text);
    expect(piped.status).toBe(0);
    expect((JSON.parse(piped.stdout) as Report).topFingerprints).toHaveLength(1);

    const missing = await governor(["report"]);
    expect(missing.status).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain("expected one or more event log files");
  });

  it("names the log it could not read (a directory, a missing file), exit 2", async () => {
    const folder = await governor(["report", dir]);
    expect(folder.status).toBe(2);
    expect(folder.stdout).toBe("");
    expect(folder.stderr).toBe(
      `governor report: ${dir}: EISDIR: illegal operation on a directory, read\n`,
    );

    const absent = join(dir, "absent.jsonl");
    const missing = await governor(["report", absent]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(new RegExp(`^governor report: ${absent}: ENOENT`));
  });

  it("issue 8 (smaller): reads Governor's own log, a call denied by policy included", async () => {
    const own = join(dir, "own.jsonl");
    const sink = createJsonlSink(own);
    const gov = createGovernor(
      { tools: { drop_table: { access: "deny" }, get_note: { effect: "read_only" } } },
      { metrics: false, onEvent: sink.write },
    );
    const run = gov.startRun();
    const denied = await run.call({ tool: "drop_table", args: { name: "users" } }, async () => ({
      dropped: true,
    }));
    expect(denied.kind).not.toBe("ok");
    run.end();
    await sink.close();
    expect(sink.lastError).toBeUndefined();
    // The denied call's decision comes before any attempt: attempt 0.
    const written = parseEvents(await readFile(own, "utf8"));
    expect(written.errors).toEqual([]);
    expect(written.events.find((e) => e.type === "decision")).toMatchObject({ attempt: 0 });

    const { status, stdout, stderr } = await governor(["report", own, "--json"]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ runs: 1, failures: 1, calls: { total: 1 } });
  });

  it("issue 12.7: counts, per server, the failures that fell through to the default", async () => {
    const own = join(dir, "unclassified.jsonl");
    const sink = createJsonlSink(own);
    const gov = createGovernor(
      { defaults: { effect: "read_only" } },
      { metrics: false, onEvent: sink.write },
    );
    const failWith = (text: string) => async () => ({
      content: [{ type: "text", text }],
      isError: true,
    });
    for (const [server, text] of [
      ["vault", "the frobnicator glitched"],
      ["vault", "a wobble in the widget"],
      ["vault", "Note 'x' not found"],
      ["mail", "the frobnicator glitched"],
      ["mail", "NOPERM this user has no permissions to run the 'send' command"],
    ] as const) {
      const run = gov.startRun();
      await run.call({ tool: "act", server, args: { n: 1 } }, failWith(text));
      run.end();
    }
    const run = gov.startRun();
    await run.call({ tool: "act", args: { n: 1 } }, failWith("zzz"));
    run.end();
    await sink.close();
    expect(sink.lastError).toBeUndefined();

    const json = await governor(["report", own, "--json"]);
    expect(json.status).toBe(0);
    expect((JSON.parse(json.stdout) as Report).unclassified).toEqual({
      total: 4,
      byServer: {
        vault: { unclassified: 2, failures: 3 },
        "(none)": { unclassified: 1, failures: 1 },
        mail: { unclassified: 1, failures: 2 },
      },
    });
    const text = await governor(["report", own]);
    expect(text.stdout).toContain("Failures no rule classified (the default decided): 4 of 6");
    expect(text.stdout).toMatch(/vault\s+2\s+3\s+67%/);
    expect(text.stdout).toMatch(/mail\s+1\s+2\s+50%/);
  });

  it("issue 9.7: a large log is streamed: ~50 MB reported with a 64 MB heap", async () => {
    const big = join(dir, "big.jsonl");
    const out = createWriteStream(big);
    const runs = 20_000;
    const perRun = 10;
    const pad = "x".repeat(120);
    for (let r = 0; r < runs; r += 1) {
      const runId = `run-${r}-${pad}`;
      const lines: string[] = [];
      for (let i = 0; i < perRun - 1; i += 1) {
        lines.push(
          JSON.stringify({
            v: 1,
            type: "decision",
            at: at + r,
            runId,
            tool: `tool_${i}`,
            attempt: 1,
            action: "retry_dependency",
            reason: "unavailable",
            certainty: "failed",
            fingerprint: (i % 4).toString(16).repeat(16),
            delayMs: 10,
            observed: false,
          }),
        );
      }
      lines.push(
        JSON.stringify({
          ...events[2],
          runId,
          summary: { ...(events[2] as { summary: object }).summary, runId },
        }),
      );
      if (!out.write(`${lines.join("\n")}\n`)) await once(out, "drain");
    }
    out.end();
    await finished(out);
    expect((await stat(big)).size).toBeGreaterThan(50 * 1024 * 1024);

    const { status, stdout, stderr } = await governorProcess(["report", big, "--json"], undefined, [
      "--max-old-space-size=64",
    ]);
    expect(stderr).toBe("");
    expect(status).toBe(0);
    const report = JSON.parse(stdout) as Report;
    expect(report).toMatchObject({
      events: runs * perRun,
      runs,
      openRuns: 0,
      failures: runs * (perRun - 1),
      retries: { total: runs * (perRun - 1) },
    });
    expect(report.topFingerprints[0]).toMatchObject({ fingerprint: "0".repeat(16), runs });
  }, 120_000);

  it("issue 26: runs that never end, each with its own fingerprint and tool, are reported in a 64 MB heap", async () => {
    // More runs, fingerprints and tools than the report tracks (REPORT_LIMITS): before the top
    // lists were bounded and runs aged out, every one of them was held until the end.
    const many = join(dir, "many.jsonl");
    const out = createWriteStream(many);
    const runs = 130_000;
    for (let r = 0; r < runs; r += 1) {
      const line = JSON.stringify({
        v: 1,
        type: "decision",
        at: at + r,
        runId: `run-${r}-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee`,
        tool: `tool_${r}`,
        attempt: 1,
        action: "retry_dependency",
        reason: "unavailable",
        certainty: "failed",
        fingerprint: r.toString(16).padStart(16, "0"),
        observed: false,
      });
      if (!out.write(`${line}\n`)) await once(out, "drain");
    }
    out.end();
    await finished(out);
    const page = join(dir, "many.html");
    const { status, stdout, stderr } = await governorProcess(
      ["report", many, "--json", "--html", page],
      undefined,
      ["--max-old-space-size=64"],
    );
    expect(stderr).toBe("");
    expect(status).toBe(0);
    const report = JSON.parse(stdout) as Report;
    expect(report).toMatchObject({ events: runs, openRuns: runs, failures: runs });
    expect(report.agedOutRuns).toBe(runs - 10_000); // REPORT_LIMITS.runs
    expect(Object.keys(report.retries.byTool)).toHaveLength(101);
    expect(report.topFingerprints[0]?.error).toBeGreaterThan(0);
    expect((await stat(page)).size).toBeGreaterThan(0);
  }, 120_000);

  it("issue 26: an event at a time no date holds is named by its line and skipped; the page is written", async () => {
    const odd = join(dir, "odd-time.jsonl");
    const lines = events.map((e) => JSON.stringify(e));
    lines.splice(1, 0, JSON.stringify({ ...events[1], at: 1e17 }));
    await appendFile(odd, `${lines.join("\n")}\n`);
    const page = join(dir, "odd-time.html");
    const { status, stdout, stderr } = await governor(["report", odd, "--html", page]);
    expect(stderr.trim()).toBe(
      `governor report: ${odd}: line 2: at: not a time: 100000000000000000 is past the latest epoch ms a date holds (8640000000000000)`,
    );
    expect(status).toBe(1);
    expect(stdout).toContain(`Events: ${events.length} (2025-01-01T00:00:00.000Z`);
    expect(await readFile(page, "utf8")).toContain("<html");
  });

  it("issue 9.7: skips a line too long to hold, keeps line numbers, reads the rest", async () => {
    const text = [
      JSON.stringify(events[0]),
      `{"v":1,"type":"call","tool":"${"y".repeat(17 * 1024 * 1024)}"}`,
      JSON.stringify({ ...events[1], attempts: "two" }),
      ...events.slice(1).map((e) => JSON.stringify(e)),
    ].join("\r\n");
    const { status, stdout, stderr } = await governor(["report", "-", "--json"], text);
    expect(status).toBe(1);
    const messages = stderr.trim().split("\n");
    expect(messages).toHaveLength(2);
    expect(messages[0]).toContain("-: line 2: longer than 16777216 bytes, skipped");
    expect(messages[1]).toMatch(/-: line 3: attempts: /);
    expect(JSON.parse(stdout)).toEqual(summarizeEvents(events));
  }, 60_000);
});
