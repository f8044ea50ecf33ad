import type { Report } from "@governor/core";
import { type HtmlAggregate, USAGE_BUCKETS } from "./html-aggregate.ts";
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
  const title = "Run ends over time, by reason";
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
    `Each column is ${esc(width)} of run ends (<code>run_end</code> events); <code>completed</code> is a run the host ended.`,
  );
}

function fingerprints(report: Report): string {
  const title = "Costliest failure fingerprints (wasted attempts)";
  if (report.topFingerprints.length === 0)
    return empty("fingerprints", title, "No failure in the log.");
  const rows = report.topFingerprints.map((f) => ({
    label: `${f.fingerprint} ${f.tools.join(",")}`,
    value: f.count,
    title: `${f.fingerprint}: ${f.count} failed attempts in ${f.runs} runs; reasons ${f.reasons.join(", ")}; actions ${f.actions.join(", ")}`,
  }));
  return section(
    "fingerprints",
    title,
    horizontalBars(rows, { label: title }),
    "Failed attempts per fingerprint (each one a call that gave no usable result); hover a bar for its reasons and actions.",
  );
}

function toolRates(agg: HtmlAggregate): string {
  const title = "Per tool: failure, retry, correction and switch rates";
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
    "Share of the tool's attempts (in brackets) that failed, and that were retried, sent back for correction or switched (refusals before any attempt are not counted). Tools are <code>server/tool</code>; the most called first.",
  );
}

function budgetUse(report: Report, agg: HtmlAggregate): string {
  const title = "Budget use per run";
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
    `Runs by how many calls, failures and retries they used. Runs stopped by a spent budget: ${exhausted === "" ? "none" : exhausted}.`,
  );
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
svg text.small,svg text.legend{font-size:10px}.note{color:#555;font-size:12px}`;

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
