import type { Report } from "@governor/core";
import { type HtmlAggregate, USAGE_BUCKETS } from "./html-aggregate.ts";
import { MAX_STOPPED_RUNS, NO_TOOL, type RunStep, type StoppedRun } from "./html-stops.ts";
import { esc, groupedBars, horizontalBars, stackedColumns } from "./html-svg.ts";
import type { ReplayReport } from "./replay-log.ts";

// One self-contained page: inline CSS and SVG, no script, and a Content-Security-Policy that
// forbids every fetch, so opening it reaches no network. Its size depends on the aggregate's
// caps (time buckets, tools, fingerprints, change pairs), not on the log.

const percent = (n: number) => `${n.toFixed(n >= 10 || n === 0 ? 0 : 1)}%`;
const rate = (part: number, whole: number) => (whole === 0 ? 0 : (part / whole) * 100);

function when(at: number): string {
  return new Date(at)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

function section(id: string, title: string, chart: string, note: string): string {
  return `<section><h2>${esc(title)}</h2><figure class="chart" data-chart="${id}">${chart}</figure><p class="note">${note}</p></section>`;
}

function empty(id: string, title: string, why: string): string {
  return `<section><h2>${esc(title)}</h2><figure class="chart empty" data-chart="${id}"><p>${esc(why)}</p></figure></section>`;
}

function stopsOverTime(agg: HtmlAggregate): string {
  const title = "Run ends over time, by reason (runs per column)";
  if (agg.start === null) return empty("run-ends", title, "No run ended in the log.");
  const totals = new Map<string, number>();
  for (const b of agg.buckets) {
    for (const [reason, n] of Object.entries(b))
      totals.set(reason, (totals.get(reason) ?? 0) + (n ?? 0));
  }
  const series = [...totals].sort((a, b) => b[1] - a[1]).map(([r]) => r);
  const start = agg.start;
  const columns = agg.buckets.map((parts, i) => ({
    label: when(start + i * agg.bucketMs),
    parts: parts as Record<string, number>,
  }));
  const width =
    agg.bucketMs >= 60_000 ? `${agg.bucketMs / 60_000} min` : `${agg.bucketMs / 1000} s`;
  return section(
    "run-ends",
    title,
    stackedColumns(columns, series, { label: title }),
    `Each column counts the runs that ended in ${esc(width)} (<code>run_end</code> events), its total written above it, coloured by end reason; <code>completed</code> is a run the host ended.`,
  );
}

function fingerprints(report: Report): string {
  const title = "Costliest failure fingerprints (failed attempts each)";
  if (report.topFingerprints.length === 0)
    return empty("fingerprints", title, "No failure in the log.");
  const rows = report.topFingerprints.map((f) => ({
    label: `${f.fingerprint} ${f.tools.join(",")}`,
    value: f.count,
    note: `in ${f.runs} run${f.runs === 1 ? "" : "s"} · ${f.reasons.join(", ")} → ${f.actions.join(", ")}`,
    title: `${f.fingerprint}: ${f.count} failed attempts in ${f.runs} runs; reasons ${f.reasons.join(", ")}; actions ${f.actions.join(", ")}`,
  }));
  return section(
    "fingerprints",
    title,
    horizontalBars(rows, { label: title }),
    "Each bar counts the failed attempts with one fingerprint (the same failure), its tools on the left; after the count, how many runs it hit, its reasons and the actions decided.",
  );
}

function toolRates(agg: HtmlAggregate): string {
  const title = "Per tool: failure, retry, correction and switch rates (% of its attempts)";
  const tools = agg.tools.filter((t) => t.attempts > 0 || t.failures > 0);
  if (tools.length === 0) return empty("tool-rates", title, "No tool call in the log.");
  const rows = tools.map((t) => ({
    label: `${t.name} (${t.attempts})`,
    values: [
      rate(t.failures, t.attempts),
      rate(t.retries, t.attempts),
      rate(t.corrections, t.attempts),
      rate(t.switches, t.attempts),
    ],
  }));
  return section(
    "tool-rates",
    title,
    groupedBars(rows, ["failures", "retries", "corrections", "switches"], {
      label: title,
      format: percent,
    }),
    "Each bar is a share of the tool's attempts (their number in brackets): those that failed, and those retried, sent back for correction or switched; a missing bar is 0%. Refusals before any attempt are not counted. Tools are <code>server/tool</code>; the most called first.",
  );
}

function budgetUse(report: Report, agg: HtmlAggregate): string {
  const title = "Budget use per run (number of runs)";
  const runs = agg.usage.calls.reduce((n, v) => n + v, 0);
  if (runs === 0) return empty("budget-use", title, "No run ended in the log.");
  const rows = USAGE_BUCKETS.map((label, i) => ({
    label,
    values: [agg.usage.calls[i] ?? 0, agg.usage.failures[i] ?? 0, agg.usage.retries[i] ?? 0],
  }));
  const exhausted = Object.entries(report.budgetsExhausted)
    .map(([name, n]) => `${esc(name)} ${n}`)
    .join(", ");
  return section(
    "budget-use",
    title,
    groupedBars(rows, ["calls", "failures", "retries"], { label: title }),
    `Each bar counts <b>runs</b>: how many runs used that many calls, failures or retries (the row). Runs stopped by a spent budget: ${exhausted === "" ? "none" : exhausted}.`,
  );
}

/** Which tool stopped which runs and why: a table, no hovering. */
function stopTable(agg: HtmlAggregate): string {
  const title = "Stopped runs by reason and tool";
  const { rows, otherRuns } = agg.stops;
  if (rows.length === 0 && otherRuns === 0) {
    return `<section id="stops"><h2>${esc(title)}</h2><p class="note">No run was stopped: every run that ended was ended by the host (<code>completed</code>).</p></section>`;
  }
  const total = rows.reduce((n, r) => n + r.runs, otherRuns);
  const body = rows
    .map(
      (r) =>
        `<tr><td><code>${esc(r.reason)}</code></td><td>${r.tool === NO_TOOL ? esc(NO_TOOL) : `<code>${esc(r.tool)}</code>`}</td><td class="num">${r.runs}</td><td class="example">${r.example === "" ? "—" : esc(r.example)}</td></tr>`,
    )
    .join("");
  const other =
    otherRuns > 0
      ? `<tr><td colspan="2">(other reasons and tools)</td><td class="num">${otherRuns}</td><td></td></tr>`
      : "";
  return `<section id="stops"><h2>${esc(title)}</h2><table class="stops"><caption>${total} stopped run${total === 1 ? "" : "s"}, counted by stop reason and the tool whose failure came last; one example message each, redacted as the model read it.</caption><thead><tr><th>reason</th><th>tool</th><th class="num">runs</th><th>example message</th></tr></thead><tbody>${body}${other}</tbody></table></section>`;
}

const VERBS: Record<string, string> = {
  retry_dependency: "retry",
  correct_arguments: "sent back to the model to correct its arguments",
  switch_tool: "told the model to switch tool",
  stop: "stopped the run",
  host: "handed to the host",
};

const seconds = (ms: number) => `+${(ms / 1000).toFixed(3)} s`;

function stepLine(s: RunStep): string {
  const call = s.call === undefined ? "" : `call ${s.call} `;
  if (s.kind === "call") {
    return `<li class="call"><time>${seconds(s.atMs)}</time> ${esc(call)}<code>${esc(s.tool)}</code> ended: <b>${esc(s.outcome)}</b> after ${s.attempts} attempt${s.attempts === 1 ? "" : "s"} (${s.durationMs} ms)</li>`;
  }
  const what = s.attempt === 0 ? "refused before any attempt" : `attempt ${s.attempt} failed`;
  const verb = VERBS[s.action] ?? s.action;
  const backoff = s.delayMs === undefined ? "" : `, next attempt in ${s.delayMs} ms`;
  const text = s.text === undefined || s.text === "" ? "" : ` <q>${esc(s.text)}</q>`;
  return `<li class="decision ${esc(s.action)}"><time>${seconds(s.atMs)}</time> ${esc(call)}<code>${esc(s.tool)}</code> ${what}: <b>${esc(verb)}</b> (<code>${esc(s.action)}</code>, reason <code>${esc(s.reason)}</code>${esc(backoff)})${text}</li>`;
}

function stoppedRun(run: StoppedRun, open: boolean): string {
  const steps = run.steps.map(stepLine).join("");
  const more = run.moreSteps > 0 ? `<li>… ${run.moreSteps} more steps not kept</li>` : "";
  const tool = run.tool === NO_TOOL ? esc(NO_TOOL) : `<code>${esc(run.tool)}</code>`;
  return `<details${open ? " open" : ""}><summary><code>${esc(run.runId)}</code>: stopped with <b>${esc(run.reason)}</b> at ${tool}, ${run.calls} call${run.calls === 1 ? "" : "s"}, ${run.attempts} attempt${run.attempts === 1 ? "" : "s"}, ${run.durationMs} ms, ended ${esc(when(run.at))}</summary><ol class="steps">${steps === "" ? "<li>No step of this run is in the log.</li>" : steps}${more}</ol></details>`;
}

/** The latest stopped runs, one by one: their calls, attempts and decisions in order. */
function stoppedRuns(agg: HtmlAggregate): string {
  const { runs } = agg.stops;
  if (runs.length === 0) return "";
  const list = runs.map((r, i) => stoppedRun(r, i === 0)).join("");
  return `<section id="stopped-runs"><h2>Stopped runs, step by step</h2><p class="note">The latest ${runs.length} stopped runs (at most ${MAX_STOPPED_RUNS}), the latest first; open one to read its calls, attempts and Governor's decisions in order, timed from the run's start.</p>${list}</section>`;
}

const MAX_PAIRS = 12;

function replayDiff(replay: ReplayReport): string {
  const title = "Replay: what the other policy changes";
  const { runs } = replay;
  const same = runs.total - runs.changed - runs.unreplayable;
  const effects = [
    { label: "same", value: same },
    { label: "stop earlier", value: runs.stoppedEarlier },
    { label: "stop later", value: runs.stoppedLater },
    { label: "cannot be followed", value: runs.diverged },
    {
      label: "other change",
      value: runs.changed - runs.stoppedEarlier - runs.stoppedLater - runs.diverged,
    },
    { label: "not replayable", value: runs.unreplayable },
  ].filter((e) => e.value > 0);
  const pairs = new Map<string, number>();
  for (const c of replay.changes) {
    const key = `${c.before.action} → ${c.after.action} (${c.after.reason})`;
    pairs.set(key, (pairs.get(key) ?? 0) + 1);
  }
  const pairRows = [...pairs]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_PAIRS)
    .map(([label, value]) => ({ label, value }));
  const charts =
    horizontalBars(effects, { label: "Runs by effect" }) +
    (pairRows.length > 0 ? horizontalBars(pairRows, { label: "Changed decisions" }) : "");
  return section(
    "replay",
    title,
    charts,
    `${runs.total} runs: ${runs.stoppedEarlier} would stop earlier, ${runs.stoppedLater} later; ${replay.decisions.changed} of ${replay.decisions.total} decisions change (before → after, top ${MAX_PAIRS}); ${replay.callsSaved} calls saved.`,
  );
}

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin:28px 0 8px}
.totals{display:flex;gap:24px;flex-wrap:wrap}.totals div{background:#f4f4f4;padding:8px 12px;border-radius:4px}
.totals b{display:block;font-size:18px}figure{margin:0;overflow-x:auto}svg text{font-size:11px;fill:#222}
svg text.small,svg text.legend{font-size:10px}.note{color:#555;font-size:12px}
table.stops{border-collapse:collapse;width:100%}table.stops caption{text-align:left;color:#555;font-size:12px;padding-bottom:6px}
table.stops th,table.stops td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
table.stops .num{text-align:right}table.stops .example{color:#444;font-size:12px;word-break:break-word}
details{border:1px solid #ddd;border-radius:4px;padding:6px 10px;margin:6px 0}summary{cursor:pointer}
ol.steps{margin:6px 0;padding-left:22px}ol.steps li{margin:2px 0}ol.steps time{color:#666;font-variant-numeric:tabular-nums;margin-right:4px}
ol.steps q{color:#444;font-size:12px}ol.steps li.stop b,ol.steps li.host b{color:#b00}`;

/** The page for a report, its aggregate and, optionally, a replay. */
export function renderHtmlReport(
  report: Report,
  agg: HtmlAggregate,
  replay?: ReplayReport,
): string {
  const span =
    report.firstAt === null
      ? "no events"
      : `${when(report.firstAt)} to ${when(report.lastAt ?? report.firstAt)}`;
  const totals = [
    ["events", report.events],
    ["runs ended", report.runs],
    ["tool calls", report.calls.total],
    ["wasted calls", report.calls.wasted],
    ["failed attempts", report.failures],
    ["retries", report.retries.total],
  ]
    .map(([label, n]) => `<div><b>${n}</b>${label}</div>`)
    .join("");
  const body = [
    stopTable(agg),
    stoppedRuns(agg),
    stopsOverTime(agg),
    fingerprints(report),
    toolRates(agg),
    budgetUse(report, agg),
    ...(replay === undefined ? [] : [replayDiff(replay)]),
  ].join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Governor report</title><style>${STYLE}</style></head>
<body><h1>Governor report</h1><p>${esc(span)}</p><div class="totals">${totals}</div>
${body}
</body></html>
`;
}
