import type { DemoCounts, DemoReport, DemoTaskResult, Strategy } from "./demo-types.ts";

const LABELS: Record<Strategy, string> = {
  naive: "naive",
  blindRetry: "blind retry",
  governed: "governed",
};
const ORDER: readonly Strategy[] = ["naive", "blindRetry", "governed"];

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + " ".repeat(width - text.length);
}

function padLeft(text: string, width: number): string {
  return text.length >= width ? text : " ".repeat(width - text.length) + text;
}

/** One cell: outcome, calls/wasted, and what went wrong besides. */
function cell(r: DemoTaskResult): string {
  const marks = [
    r.duplicateWrites > 0 ? `dup ${r.duplicateWrites}` : "",
    r.secretsToModel > 0 ? `leak ${r.secretsToModel}` : "",
  ].filter((m) => m !== "");
  const outcome = r.succeeded
    ? "ok"
    : r.outcome === "turn_limit"
      ? "turn limit"
      : `stop ${r.outcome}`;
  return `${outcome} ${r.toolCalls}/${r.wastedCalls}${marks.length > 0 ? ` ${marks.join(" ")}` : ""}`;
}

function counts(record: Readonly<Record<string, number>>): string {
  const entries = Object.entries(record).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return entries.length === 0 ? "none" : entries.map(([k, v]) => `${k} ${v}`).join(", ");
}

/** The human-readable report of `governor demo`. */
export function formatDemo(report: DemoReport): string {
  const lines: string[] = [];
  const taskWidth = Math.max(4, ...report.tasks.map((t) => t.id.length)) + 2;
  const cells = report.tasks.map((t) => ORDER.map((s) => cell(t[s])));
  const widths = ORDER.map(
    (s, i) => Math.max(LABELS[s].length, ...cells.map((row) => (row[i] ?? "").length)) + 2,
  );
  const row = (first: string, rest: readonly string[]) =>
    (pad(first, taskWidth) + rest.map((c, i) => pad(c, widths[i] ?? 0)).join("")).trimEnd();

  lines.push(
    `governor demo: one scripted agent, ${report.tasks.length} tasks, three runtimes, a fault server over stdio`,
    `(each cell: outcome calls/wasted; dup = duplicate writes, leak = secrets shown to the model; turn limit ${report.maxTurns})`,
    ...(report.observeOnly === true
      ? ["governed runs in observe-only mode: decisions are logged, not enforced"]
      : []),
    "",
    row(
      "task",
      ORDER.map((s) => LABELS[s]),
    ),
  );
  report.tasks.forEach((t, i) => {
    lines.push(row(t.id, cells[i] ?? []));
  });

  const metricRows: ReadonlyArray<[string, keyof DemoCounts]> = [
    ["tool calls", "toolCalls"],
    ["wasted calls", "wastedCalls"],
    ["duplicate writes", "duplicateWrites"],
    ["secrets to model", "secretsToModel"],
    ["tasks succeeded", "tasksSucceeded"],
    ["model calls", "modelCalls"],
    ["runtime retries", "retries"],
  ];
  const labelWidth = Math.max(...metricRows.map(([l]) => l.length)) + 2;
  const colWidth = Math.max(...ORDER.map((s) => LABELS[s].length)) + 2;
  lines.push(
    "",
    `${pad("totals", labelWidth)}${ORDER.map((s) => padLeft(LABELS[s], colWidth)).join("")}`,
  );
  for (const [label, key] of metricRows) {
    const values = ORDER.map((s) => {
      const v = report.totals[s][key] as number;
      return key === "tasksSucceeded" ? `${v}/${report.tasks.length}` : String(v);
    });
    lines.push(`${pad(label, labelWidth)}${values.map((v) => padLeft(v, colWidth)).join("")}`);
  }

  lines.push("", "unfinished tasks");
  for (const s of ORDER)
    lines.push(`  ${pad(LABELS[s], colWidth)}${counts(report.totals[s].stopReasons)}`);

  const m = report.metrics;
  lines.push(
    "",
    `Governor metrics (${m.runs} runs): ${m.attempts} attempts for ${m.calls} calls, ${m.failures} failures, ` +
      `${m.retries} retries, ${m.corrections} corrections, ${m.switches} switches, ${m.hostErrors} to the host`,
    `  runs stopped: ${counts(m.stops)}`,
    "",
    `done in ${report.durationMs} ms; governor demo --json for the details`,
  );
  return `${lines.join("\n")}\n`;
}
