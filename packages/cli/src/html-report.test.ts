import {
  createGovernor,
  type GovernorEvent,
  loadPolicy,
  type RunSummary,
  summarizeEvents,
} from "@governor/core";
import { describe, expect, it } from "vitest";
import { HtmlTally, MAX_TOOLS } from "./html-aggregate.ts";
import { renderHtmlReport } from "./html-page.ts";
import { MAX_STOPPED_RUNS, StopTally } from "./html-stops.ts";
import { ReplayTally } from "./replay-log.ts";

/** Real events: a governor's runs with corrections, retries, stops and successes. */
/** Half past a second: the events of governedEvents all carry it. */
const AT = Date.UTC(2026, 0, 1, 9, 0, 0, 500);

async function governedEvents(tool = "get_note"): Promise<GovernorEvent[]> {
  const events: GovernorEvent[] = [];
  const governor = createGovernor(
    { defaults: { effect: "read_only", retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 } } },
    // A clock that stands still: the page puts run ends in columns of a second on the clock, and
    // runs that straddle a second (a slow machine) would split the one column the test expects.
    { now: () => AT, random: () => 0.5, metrics: false, onEvent: (e) => events.push(e) },
  );
  const fail = (text: string) => async () => ({ isError: true, content: [{ type: "text", text }] });
  for (let i = 0; i < 3; i += 1) {
    const run = governor.startRun({ runId: `r${i}` });
    await run.call({ tool, args: { id: i } }, fail('No note with id "x"'));
    await run.call({ tool: "fetch", args: { i } }, fail("503 Service Unavailable"));
    await run.call({ tool: "delete", args: { i } }, fail("Permission denied"));
    run.end();
  }
  const ok = governor.startRun({ runId: "ok" });
  await ok.call({ tool, args: {} }, async () => ({ content: [] }));
  ok.end();
  return events;
}

function page(events: GovernorEvent[], replay?: ReplayTally): string {
  const tally = new HtmlTally();
  for (const e of events) {
    tally.add(e);
    replay?.add(e);
  }
  return renderHtmlReport(summarizeEvents(events), tally.result(), replay?.result());
}

/** The charts of a page and how many bars with a value above 0 each has. */
function charts(html: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of html.matchAll(
    /<figure class="chart[^"]*" data-chart="([^"]+)">([\s\S]*?)<\/figure>/g,
  )) {
    const bars = [...(m[2] ?? "").matchAll(/class="bar" data-value="([^"]+)"/g)];
    out[m[1] as string] = bars.filter((b) => Number(b[1]) > 0).length;
  }
  return out;
}

describe("governor report --html", () => {
  it("draws every chart from a real log, with no script and nothing fetched", async () => {
    const events = await governedEvents();
    const html = page(events, new ReplayTally(loadPolicy({ budgets: { calls: 1 } })));
    const drawn = charts(html);
    expect(Object.keys(drawn)).toEqual([
      "run-ends",
      "fingerprints",
      "tool-rates",
      "budget-use",
      "replay",
    ]);
    for (const [chart, bars] of Object.entries(drawn)) expect(bars, chart).toBeGreaterThan(0);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
    expect(html).not.toMatch(/<script|<link|<img|<iframe|url\(|@import/i);
    // The only URL is the SVG namespace, an identifier that is never fetched.
    const urls = [...html.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => m[0]);
    expect(new Set(urls)).toEqual(new Set(["http://www.w3.org/2000/svg"]));
    // The stricter replay (one call per run) stops the three failing runs at their second call.
    expect(html).toContain("3 would stop earlier");
  });

  it("answers which tool stopped which runs and why: a table of counts with an example each, and each stopped run step by step", async () => {
    const html = page(await governedEvents());
    const table = html.match(/<table class="stops">([\s\S]*?)<\/table>/)?.[1] ?? "";
    expect(table).toContain("3 stopped runs");
    const rows = [
      ...table.matchAll(
        /<tr><td><code>([^<]+)<\/code><\/td><td><code>([^<]+)<\/code><\/td><td class="num">(\d+)<\/td><td class="example">([^<]*)<\/td><\/tr>/g,
      ),
    ].map((m) => m.slice(1));
    expect(rows).toEqual([["retries_exhausted", "fetch", "3", "503 Service Unavailable"]]);
    // One <details> per stopped run, the latest first and open; readable without a script.
    const details = [
      ...html.matchAll(/<details( open)?><summary>([\s\S]*?)<\/summary>([\s\S]*?)<\/details>/g),
    ];
    expect(details.map((d) => [Boolean(d[1]), d[2]?.match(/<code>(r\d)<\/code>/)?.[1]])).toEqual([
      [true, "r2"],
      [false, "r1"],
      [false, "r0"],
    ]);
    const steps = [...(details[0]?.[3] ?? "").matchAll(/<li[^>]*>([\s\S]*?)<\/li>/g)].map((m) =>
      (m[1] ?? "").replace(/<[^>]+>/g, ""),
    );
    expect(steps).toEqual([
      expect.stringMatching(
        /^\+\d\.\d{3} s call 1 get_note attempt 1 failed: sent back to the model to correct its arguments \(correct_arguments, reason not_found\) “?No note with id &quot;x&quot;/,
      ),
      expect.stringMatching(/^\+\d\.\d{3} s call 1 get_note ended: model after 1 attempt/),
      expect.stringMatching(
        /call 2 fetch attempt 1 failed: retry \(retry_dependency, reason unavailable, next attempt in \d+ ms\)/,
      ),
      expect.stringMatching(
        /call 2 fetch attempt 2 failed: stopped the run \(stop, reason retries_exhausted\) “?503 Service Unavailable/,
      ),
      expect.stringMatching(/call 2 fetch ended: stop after 2 attempts/),
    ]);
  });

  it("writes counts on the charts, no zero labels, and says what each chart counts", async () => {
    const html = page(await governedEvents());
    const rates = html.match(/data-chart="tool-rates">([\s\S]*?)<\/figure>/)?.[1] ?? "";
    expect(rates).not.toMatch(/>0%</);
    const ends = html.match(/data-chart="run-ends">([\s\S]*?)<\/figure>/)?.[1] ?? "";
    expect([...ends.matchAll(/class="small count">(\d+)</g)].map((m) => Number(m[1]))).toEqual([4]);
    for (const title of [
      "Run ends over time, by reason (runs per column)",
      "Costliest failure fingerprints (failed attempts each)",
      "Per tool: failure, retry, correction and switch rates (% of its attempts)",
      "Budget use per run (number of runs)",
    ]) {
      expect(html).toContain(`<h2>${title.replaceAll("%", "%")}</h2>`);
    }
  });

  it("escapes names from the log: a tool name cannot inject markup", async () => {
    const hostile = `<img src=x onerror="alert(1)">`;
    const html = page(await governedEvents(hostile));
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  });

  it("stays bounded: 20,000 runs over a day with 500 tools and 5,000 fingerprints", () => {
    const tally = new HtmlTally();
    const events: GovernorEvent[] = [];
    const start = Date.UTC(2026, 0, 1);
    const summary = (runId: string, i: number): RunSummary => ({
      runId,
      reason: i % 7 === 0 ? "repeated_failure" : "completed",
      personResolvable: false,
      calls: i % 40,
      attempts: i % 45,
      actions: { correct_arguments: 1, retry_dependency: 0, switch_tool: 0, stop: 0, host: 0 },
      retries: i % 5,
      failures: i % 9,
      fingerprints: {},
      durationMs: 10,
      observeOnly: false,
    });
    for (let i = 0; i < 20_000; i += 1) {
      const at = start + Math.floor((i / 20_000) * 86_400_000);
      const runId = `run-${i}`;
      const tool = `tool_${i % 500}`;
      events.push(
        {
          v: 1,
          type: "decision",
          at,
          runId,
          tool,
          attempt: 1,
          action: "correct_arguments",
          reason: "invalid_argument",
          certainty: "failed",
          fingerprint: (i % 5000).toString(16).padStart(16, "0"),
          observed: false,
        },
        { v: 1, type: "call", at, runId, tool, outcome: "model", attempts: 1, durationMs: 1 },
        { v: 1, type: "run_end", at, runId, summary: summary(runId, i) },
      );
    }
    for (const e of events) tally.add(e);
    const agg = tally.result();
    expect(agg.tools).toHaveLength(MAX_TOOLS + 1);
    expect(agg.tools.at(-1)?.name).toBe("(other tools)");
    expect(agg.buckets.length).toBeLessThanOrEqual(48);
    expect(
      agg.buckets.reduce((n, b) => n + Object.values(b).reduce((m, v) => m + (v ?? 0), 0), 0),
    ).toBe(20_000);
    const html = renderHtmlReport(summarizeEvents(events), agg);
    const small = renderHtmlReport(
      summarizeEvents(events.slice(0, 3_000)),
      (() => {
        const t = new HtmlTally();
        for (const e of events.slice(0, 3_000)) t.add(e);
        return t.result();
      })(),
    );
    expect(html.length).toBeLessThan(80_000);
    // Seven times the runs, about the same page.
    expect(html.length).toBeLessThan(small.length * 1.5);
  });

  it("keeps the stopped runs' steps bounded: the latest 20 runs, 40 steps each, a count of the rest", () => {
    const stops = new StopTally();
    const at = Date.UTC(2026, 0, 1);
    for (let r = 0; r < 3_000; r += 1) {
      const runId = `run-${r}`;
      for (let i = 0; i < 60; i += 1) {
        stops.add({
          v: 1,
          type: "decision",
          at: at + i,
          runId,
          tool: `tool_${r}`,
          call: i + 1,
          attempt: 1,
          action: "correct_arguments",
          reason: "not_found",
          certainty: "failed",
          fingerprint: "0".repeat(16),
          observed: false,
          input: {
            callHash: "0".repeat(16),
            failure: { channel: "tool", origin: "peer", text: "x".repeat(5_000) },
            elapsedMs: i,
          },
        });
      }
      if (r % 2 === 0) {
        stops.add({
          v: 1,
          type: "run_end",
          at: at + 60,
          runId,
          summary: {
            runId,
            reason: "repeated_failure",
            personResolvable: false,
            calls: 60,
            attempts: 60,
            actions: {
              correct_arguments: 60,
              retry_dependency: 0,
              switch_tool: 0,
              stop: 0,
              host: 0,
            },
            retries: 0,
            failures: 60,
            fingerprints: {},
            durationMs: 60,
            lastFailure: { tool: `tool_${r}`, reason: "not_found", text: "y".repeat(5_000) },
            observeOnly: false,
          },
        });
      }
    }
    const { rows, otherRuns, runs } = stops.result();
    expect(runs).toHaveLength(MAX_STOPPED_RUNS);
    expect(runs[0]?.runId).toBe("run-2998");
    for (const run of runs) {
      expect(run.steps).toHaveLength(40);
      expect(run.moreSteps).toBe(20);
      expect(run.steps[0]?.atMs).toBe(0);
      for (const step of run.steps) {
        if (step.kind === "decision") expect(step.text?.length).toBeLessThanOrEqual(240);
      }
    }
    // 1,500 stopped runs, one per tool: 200 pairs counted apart, the rest summed.
    expect(rows).toHaveLength(200);
    expect(rows.reduce((n, r) => n + r.runs, otherRuns)).toBe(1_500);
    expect(rows[0]?.example.length).toBeLessThanOrEqual(240);
  });
});
