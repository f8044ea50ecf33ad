import { readFile } from "node:fs/promises";
import type { Readable } from "node:stream";
import { loadPolicy, type Policy } from "@governor/core";
import type { CliIo } from "./io.ts";
import { openLog, readLogs, withoutLineNumber } from "./lines.ts";
import { parseOptions } from "./options.ts";
import { type ReplayReport, replayEventLines } from "./replay-log.ts";

/**
 * Reads logs (`-` is `stdin`) and replays them; each bad line is named by its file and its line
 * there.
 */
export async function replayFiles(
  files: readonly string[],
  policy: Policy,
  complain: (message: string) => void,
  stdin: Readable = process.stdin,
): Promise<ReplayReport> {
  const logs = readLogs(files, complain, (file) => openLog(file, stdin));
  return replayEventLines(logs.lines, policy, {
    onError: (message) => complain(`${logs.where()}: ${withoutLineNumber(message)}`),
  });
}

function arrow(d: { action: string; reason: string }): string {
  return d.action === "none" ? "(call made)" : `${d.action} (${d.reason})`;
}

const MAX_LISTED = 50;

/** The replay as text: totals, then each changed decision and each run that is not the same. */
export function formatReplay(report: ReplayReport): string {
  const { decisions, runs } = report;
  const out: string[] = [];
  out.push(
    `Decisions: ${decisions.total} re-decided, ${decisions.changed} changed`,
    `Runs: ${runs.total} ended, ${runs.changed} changed: ${runs.stoppedEarlier} stop earlier, ` +
      `${runs.stoppedLater} stop later, ${runs.diverged} cannot be followed to their end` +
      (runs.unreplayable > 0 ? `; ${runs.unreplayable} not replayable (older log)` : "") +
      (runs.open > 0 ? `; ${runs.open} without an end in the log` : ""),
    `Calls saved: ${report.callsSaved}` +
      (report.callsAdded > 0 ? `; calls added: at least ${report.callsAdded}` : ""),
  );
  if (report.changes.length > 0) {
    out.push("", "Changed decisions (run, call, tool: before -> after)");
    for (const c of report.changes.slice(0, MAX_LISTED)) {
      out.push(
        `  ${c.runId} #${c.call} ${c.tool} ${c.fingerprint}: ${arrow(c.before)} -> ${arrow(c.after)}`,
      );
    }
    if (report.changes.length > MAX_LISTED) {
      out.push(`  ... ${report.changes.length - MAX_LISTED} more (--json lists all)`);
    }
  }
  if (report.runDetails.length > 0) {
    out.push("", "Runs");
    for (const r of report.runDetails.slice(0, MAX_LISTED)) {
      const before = `${r.before.reason}${r.before.call === null ? "" : ` at call ${r.before.call}`}`;
      let line: string;
      if (r.unreplayable !== undefined) line = `not replayable: ${r.unreplayable}`;
      else if (r.after === null) {
        const verb = r.effect === "stopped_later" ? "would not stop there" : "cannot be followed";
        line = `was ${before}; ${verb}: from call ${r.diverged?.call}, ${r.diverged?.why}`;
      } else {
        const budget = r.after.budget === undefined ? "" : ` (${r.after.budget})`;
        const saved =
          r.callsSaved > 0 ? `, ${r.callsSaved} call${r.callsSaved === 1 ? "" : "s"} saved` : "";
        line = `was ${before}; would end ${r.after.reason}${budget} at call ${r.after.call}${saved}`;
      }
      out.push(`  ${r.runId}: ${line}`);
    }
    if (report.runDetails.length > MAX_LISTED) {
      out.push(`  ... ${report.runDetails.length - MAX_LISTED} more (--json lists all)`);
    }
  }
  return `${out.join("\n")}\n`;
}

/**
 * `governor replay LOG... --policy FILE [--json]`: re-decides every recorded failure of the logs
 * under the policy and prints what changes. Exit 1 when a line was bad (the rest is replayed),
 * 2 for bad usage.
 */
export async function replayCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions({
    args,
    allowPositionals: true,
    strict: true,
    options: { policy: { type: "string" }, json: { type: "boolean", default: false } },
  });
  if (positionals.length === 0) {
    io.stderr.write("governor replay: expected one or more event log files (- for stdin)\n");
    return 2;
  }
  if (values.policy === undefined) {
    io.stderr.write("governor replay: --policy FILE is required (the policy to replay under)\n");
    return 2;
  }
  const policy = loadPolicy(await readFile(values.policy, "utf8"));
  let bad = 0;
  const report = await replayFiles(
    positionals,
    policy,
    (message) => {
      bad += 1;
      io.stderr.write(`governor replay: ${message}\n`);
    },
    io.stdin,
  );
  io.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatReplay(report));
  return bad > 0 ? 1 : 0;
}
