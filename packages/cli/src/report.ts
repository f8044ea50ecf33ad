import { createReadStream } from "node:fs";
import { parseArgs } from "node:util";
import { type Report, summarizeEventLines } from "@governor/core";
import { MAX_LINE_BYTES, splitLines } from "./lines.ts";

type Cell = string | number;

/** Left-aligned text, right-aligned numbers, two spaces between columns. */
function table(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => String(row[i] ?? "").length)));
  const numeric = header.map(
    (_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === "number"),
  );
  const line = (row: readonly Cell[]) =>
    row
      .map((cell, i) => {
        const text = String(cell);
        const width = widths[i] ?? 0;
        return numeric[i] === true ? text.padStart(width) : text.padEnd(width);
      })
      .join("  ")
      .trimEnd();
  return all.map((row) => `  ${line(row)}`).join("\n");
}

function percent(part: number, whole: number): string {
  return whole === 0 ? "0%" : `${Math.round((part / whole) * 100)}%`;
}

function when(at: number | null): string {
  return at === null ? "-" : new Date(at).toISOString();
}

/** The report as text: a few headed tables. */
export function formatReport(report: Report): string {
  const out: string[] = [];
  out.push(`Events: ${report.events} (${when(report.firstAt)} .. ${when(report.lastAt)})`);
  out.push(`Runs: ${report.runs} ended, ${report.openRuns} without an end in the log`);

  const stopped = Object.entries(report.stoppedBy);
  if (stopped.length > 0) {
    const budgets = Object.entries(report.budgetsExhausted)
      .map(([name, n]) => `${name} ${n}`)
      .join(", ");
    out.push("", "Runs by end reason");
    out.push(
      table(
        ["reason", "runs", "share"],
        stopped.map(([reason, n]) => [
          reason === "budget_exhausted" && budgets !== "" ? `${reason} (${budgets})` : reason,
          n ?? 0,
          percent(n ?? 0, report.runs),
        ]),
      ),
    );
  }

  const { calls } = report;
  out.push(
    "",
    `Tool calls: ${calls.total}, wasted ${calls.wasted} (${percent(calls.wasted, calls.total)}: ` +
      "no usable result, outcome model, stop or host)",
  );
  if (calls.total > 0) {
    out.push(
      table(
        ["outcome", "calls"],
        Object.entries(calls.byOutcome).map(([outcome, n]) => [outcome, n]),
      ),
    );
  }

  out.push("", `Failed attempts: ${report.failures}; retries: ${report.retries.total}`);
  const retries = Object.entries(report.retries.byTool);
  if (retries.length > 0) out.push(table(["tool", "retries"], retries));

  if (report.topFingerprints.length > 0) {
    out.push("", "Top fingerprints");
    out.push(
      table(
        ["fingerprint", "count", "runs", "tools", "reasons", "actions"],
        report.topFingerprints.map((f) => [
          f.fingerprint,
          f.count,
          f.runs,
          f.tools.join(","),
          f.reasons.join(","),
          f.actions.join(","),
        ]),
      ),
    );
  }
  return `${out.join("\n")}\n`;
}

/**
 * `governor report FILE [--json] [--top N]`: summarizes a JSON Lines event log (`-` reads stdin).
 * Prints a table, or with `--json` one JSON object (the `Report`). Bad lines go to stderr with
 * their line numbers and make the exit status 1; the valid lines are still summarized.
 */
export async function reportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: { json: { type: "boolean", default: false }, top: { type: "string" } },
  });
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) {
    process.stderr.write("governor report: expected exactly one event log file (or - for stdin)\n");
    return 2;
  }
  let top = 10;
  if (values.top !== undefined) {
    top = Number(values.top);
    if (!Number.isInteger(top) || top < 0) {
      process.stderr.write(
        `governor report: --top must be a whole number ≥ 0, got ${JSON.stringify(values.top)}\n`,
      );
      return 2;
    }
  }
  const input = file === "-" ? process.stdin : createReadStream(file);
  let bad = 0;
  const complain = (message: string) => {
    bad += 1;
    process.stderr.write(`governor report: ${file}: ${message}\n`);
  };
  const report = await summarizeEventLines(splitLines(input, MAX_LINE_BYTES, complain), {
    top,
    onError: complain,
  });
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatReport(report));
  return bad > 0 ? 1 : 0;
}
