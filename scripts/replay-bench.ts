/**
 * `node --conditions=source --import tsx scripts/replay-bench.ts [EVENTS]`: writes an event log
 * of about EVENTS events (default 100,000) from real governed runs, then measures, side by side
 * in this process, `governor replay` against `governor report` (the baseline: the same lines
 * read, parsed and summarized), and the size of `governor report --html --replay` for that log.
 * Prints one JSON object; timings are the median of 3 passes.
 */
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, createJsonlSink, loadPolicy, summarizeEventLines } from "@governor/core";
import { parseEventLine } from "@governor/core/judge";
import { HtmlTally } from "../packages/cli/src/html-aggregate.ts";
import { renderHtmlReport } from "../packages/cli/src/html-page.ts";
import { openLog, readLogs } from "../packages/cli/src/lines.ts";
import { replayFiles } from "../packages/cli/src/replay.ts";
import { ReplayTally } from "../packages/cli/src/replay-log.ts";

const target = Number(process.argv[2] ?? 100_000);
const recording = {
  defaults: { effect: "read_only" as const, retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 } },
  tools: { pay: { effect: "mutating" as const } },
};
// The replay's policy: fewer retries, a call budget, and a rule the log's policy did not have.
const stricter = loadPolicy({
  ...recording,
  defaults: { ...recording.defaults, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 } },
  budgets: { calls: 4 },
  tools: {
    pay: { effect: "mutating", rules: [{ match: "^Payment refused", action: "stop" }] },
  },
});

const fail = (text: string) => async () => ({ isError: true, content: [{ type: "text", text }] });
const ok = async () => ({ content: [{ type: "text", text: "ok" }] });

async function writeLog(file: string): Promise<number> {
  let events = 0;
  const sink = createJsonlSink(file);
  const governor = createGovernor(recording, {
    random: () => 0,
    metrics: false,
    onEvent: (e) => {
      events += 1;
      sink.write(e);
    },
  });
  for (let i = 0; events < target; i += 1) {
    const run = governor.startRun({ runId: `run-${i}` });
    const flaky = [fail("503 Service Unavailable"), ok];
    let n = 0;
    await run.call({ tool: `search_${i % 40}`, args: { q: i } }, async () => {
      const next = flaky[Math.min(n, 1)] as typeof ok;
      n += 1;
      return next();
    });
    await run.call({ tool: "get_note", args: { id: i } }, fail(`No note with id "n${i}"`));
    await run.call({ tool: "get_note", args: { id: "welcome" } }, ok);
    if (i % 3 === 0) await run.call({ tool: "pay", args: { i } }, fail("Payment refused: limit"));
    for (let k = 0; k < i % 4; k += 1) await run.call({ tool: "list", args: { k } }, ok);
    run.end();
  }
  await sink.close();
  return events;
}

async function median(pass: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const start = performance.now();
    await pass();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[1] as number;
}

const dir = await mkdtemp(join(tmpdir(), "governor-replay-bench-"));
try {
  const log = join(dir, "events.jsonl");
  const events = await writeLog(log);
  const complain = (m: string) => {
    throw new Error(m);
  };
  const report = () =>
    summarizeEventLines(readLogs([log], complain, openLog).lines, { onError: complain });
  let replay = await replayFiles([log], stricter, complain);
  const replayMs = await median(async () => {
    replay = await replayFiles([log], stricter, complain);
  });
  const reportMs = await median(report);

  const html = new HtmlTally();
  const tally = new ReplayTally(stricter);
  async function* tee() {
    for await (const line of readLogs([log], complain, openLog).lines) {
      const e = parseEventLine(line);
      if (e !== undefined && !("error" in e)) {
        html.add(e);
        tally.add(e);
      }
      yield line;
    }
  }
  const summary = await summarizeEventLines(tee(), { onError: complain });
  const page = renderHtmlReport(summary, html.result(), tally.result());
  const pageFile = join(dir, "report.html");
  await writeFile(pageFile, page);
  const result = {
    events,
    logBytes: (await stat(log)).size,
    runs: replay.runs.total,
    replay: {
      ms: Math.round(replayMs),
      eventsPerSec: Math.round(events / (replayMs / 1000)),
      decisions: replay.decisions,
      runs: replay.runs,
      callsSaved: replay.callsSaved,
    },
    reportBaselineMs: Math.round(reportMs),
    replayOverReport: Number((replayMs / reportMs).toFixed(2)),
    htmlBytes: (await stat(pageFile)).size,
    node: process.version,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  if (process.env.KEEP_LOG === undefined) await rm(dir, { recursive: true, force: true });
  else process.stderr.write(`kept ${dir}\n`);
}
