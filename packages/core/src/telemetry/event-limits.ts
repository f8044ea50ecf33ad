import { boundName, cutWithHash, MAX_NAME } from "../judge/bound-name.ts";
import type { GovernorEvent } from "./events.ts";

export { boundName } from "../judge/bound-name.ts";

/** The longest tool, server or run name an event carries (MCP's limit for tool names). */
export const MAX_EVENT_NAME = MAX_NAME;

/** A run id fit for an event: kept as it is up to {@link MAX_EVENT_NAME} characters, else cut. */
function boundRunId(runId: string): string {
  return runId.length <= MAX_EVENT_NAME ? runId : cutWithHash(runId, runId, MAX_EVENT_NAME);
}

/**
 * The event with its names bounded (see {@link boundName}): tool, server, the run id (cut, not
 * redacted: the host chose it) and the summary's last failing tool. Called on every event before
 * any listener sees it; returns the same object when nothing changes.
 */
export function boundEvent(event: GovernorEvent): GovernorEvent {
  const runId = boundRunId(event.runId);
  switch (event.type) {
    case "decision":
    case "call": {
      const tool = boundName(event.tool);
      const server = event.server === undefined ? undefined : boundName(event.server);
      if (runId === event.runId && tool === event.tool && server === event.server) return event;
      return { ...event, runId, tool, ...(server !== undefined && { server }) };
    }
    case "run_end": {
      const { summary } = event;
      const summaryRunId = boundRunId(summary.runId);
      const last = summary.lastFailure;
      const lastTool = last === undefined ? undefined : boundName(last.tool);
      if (
        runId === event.runId &&
        summaryRunId === summary.runId &&
        (last === undefined || lastTool === last.tool)
      ) {
        return event;
      }
      return {
        ...event,
        runId,
        summary: {
          ...summary,
          runId: summaryRunId,
          ...(last !== undefined && { lastFailure: { ...last, tool: lastTool as string } }),
        },
      };
    }
  }
}

/** The smallest line limit a sink accepts: every event fits once its fields are cut. */
export const MIN_EVENT_LINE = 4_096;

/** How hard each pass cuts: longest string, most fingerprints a run summary keeps. */
const PASSES: readonly (readonly [maxString: number, maxFingerprints: number])[] = [
  [1_024, 64],
  [128, 8],
  [32, 0],
];

function cutStrings(value: unknown, max: number): unknown {
  if (typeof value === "string") return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v, max)]));
}

/**
 * The event with every string at most `maxString` characters (names, texts: the closed sets of
 * actions and reasons are shorter than any pass) and, for a run end, the most frequent
 * `maxFingerprints` fingerprints: the one map an event has that grows with the run.
 */
function cutEvent(event: GovernorEvent, maxString: number, maxFingerprints: number): unknown {
  const cut = cutStrings(event, maxString) as GovernorEvent;
  if (cut.type !== "run_end") return cut;
  const top = Object.entries(cut.summary.fingerprints)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, maxFingerprints);
  return { ...cut, summary: { ...cut.summary, fingerprints: Object.fromEntries(top) } };
}

/**
 * One JSON line (without `\n`) for the event, at most `maxLength` characters: when the whole
 * event is longer, its strings are cut (ending with `…`) and a run summary keeps its most
 * frequent fingerprints, in passes of increasing strength, and the line gets `"truncated": true`. The JSON is
 * never cut. `undefined` when even the strongest pass does not fit (a limit below
 * {@link MIN_EVENT_LINE}, or fields no event has).
 */
export function eventLine(event: GovernorEvent, maxLength: number): string | undefined {
  const whole = JSON.stringify(event);
  if (whole.length <= maxLength) return whole;
  for (const [maxString, maxFingerprints] of PASSES) {
    const cut = cutEvent(event, maxString, maxFingerprints) as Record<string, unknown>;
    const line = JSON.stringify({ ...cut, truncated: true });
    if (line.length <= maxLength) return line;
  }
  return undefined;
}
