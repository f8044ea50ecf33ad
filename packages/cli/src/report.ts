import { readFile, writeFile } from "node:fs/promises";
import { loadPolicy, type Report, summarizeEventLines } from "@governor/core";
import { parseEventLine } from "@governor/core/judge";
import { HtmlTally } from "./html-aggregate.ts";
import { renderHtmlReport } from "./html-page.ts";
import type { CliIo } from "./io.ts";
import { openLog, readLogs, withoutLineNumber } from "./lines.ts";
import { parseOptions } from "./options.ts";
import { ReplayTally } from "./replay-log.ts";

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
  const forgotten =
    report.agedOutRuns > 0 ? ` (${report.agedOutRuns} of them forgotten to bound memory)` : "";
  out.push(`Runs: ${report.runs} ended, ${report.openRuns} without an end in the log${forgotten}`);

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
    const error = Math.max(0, ...report.topFingerprints.map((f) => f.error ?? 0));
    if (error > 0) {
      out.push(
        `  (the log held more fingerprints than are tracked: a count may be over by at most ${error})`,
      );
    }
  }
  const servers = Object.entries(report.unclassified.byServer);
  if (servers.length > 0) {
    out.push(
      "",
      `Failures no rule classified (the default decided): ${report.unclassified.total} of ${report.failures}; a policy rule may be worth writing`,
    );
    out.push(
      table(
        ["server", "unclassified", "failures", "share"],
        servers.map(([name, t]) => [
          name,
          t.unclassified,
          t.failures,
          percent(t.unclassified, t.failures),
        ]),
      ),
    );
  }
  if (report.learned.total > 0) {
    out.push(
      "",
      `Decisions learned outcomes demoted: ${report.learned.total} of ${report.failures} (governor learned list shows what was learned)`,
    );
    out.push(table(["change", "decisions"], Object.entries(report.learned.byChange)));
    out.push(table(["tool", "demoted"], Object.entries(report.learned.byTool)));
  }
  return `${out.join("\n")}\n`;
}

/**
 * `governor report LOG... [--json] [--top N] [--html FILE [--replay --policy FILE]]`: summarizes
 * JSON Lines event logs (`-` reads stdin), read in order. Prints a table, or with `--json` one JSON
 * object (the `Report`). `--html FILE` also writes a self-contained page of charts; with
 * `--replay --policy FILE` it holds the replay of the logs under that policy. Bad lines go to
 * stderr with their file and line numbers and make the exit status 1; the valid lines are still
 * summarized.
 */
export async function reportCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: "boolean", default: false },
      top: { type: "string" },
      html: { type: "string" },
      replay: { type: "boolean", default: false },
      policy: { type: "string" },
    },
  });
  const usage = (message: string) => {
    io.stderr.write(`governor report: ${message}\n`);
    return 2;
  };
  if (positionals.length === 0) {
    return usage("expected one or more event log files (or - for stdin)");
  }
  let top = 10;
  if (values.top !== undefined) {
    top = Number(values.top);
    if (!Number.isInteger(top) || top < 0) {
      return usage(`--top must be a whole number ≥ 0, got ${JSON.stringify(values.top)}`);
    }
  }
  if (values.replay && (values.html === undefined || values.policy === undefined)) {
    return usage("--replay needs --html FILE and --policy FILE (the policy to replay under)");
  }
  if (values.policy !== undefined && !values.replay) {
    return usage("--policy is for --replay (the replay's policy); add --replay, or drop --policy");
  }
  const policy =
    values.policy === undefined ? undefined : loadPolicy(await readFile(values.policy, "utf8"));
  let bad = 0;
  const complain = (message: string) => {
    bad += 1;
    io.stderr.write(`governor report: ${message}\n`);
  };
  const logs = readLogs(positionals, complain, (file) => openLog(file, io.stdin));
  const html = values.html === undefined ? undefined : new HtmlTally();
  const replay = policy === undefined ? undefined : new ReplayTally(policy);
  // The summary reads the lines; the page's aggregates and the replay see the same events.
  async function* lines(): AsyncGenerator<string> {
    for await (const line of logs.lines) {
      if (html !== undefined) {
        const event = parseEventLine(line);
        if (event !== undefined && !("error" in event)) {
          html.add(event);
          replay?.add(event);
        }
      }
      yield line;
    }
  }
  const report = await summarizeEventLines(lines(), {
    top,
    onError: (message) => complain(`${logs.where()}: ${withoutLineNumber(message)}`),
  });
  if (values.html !== undefined && html !== undefined) {
    await writeFile(values.html, renderHtmlReport(report, html.result(), replay?.result()));
  }
  io.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatReport(report));
  return bad > 0 ? 1 : 0;
}
