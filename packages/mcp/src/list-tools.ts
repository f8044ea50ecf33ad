import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolWire } from "./sdk.ts";

/** At most this many `tools/list` pages are read; a server that goes on is cut off. */
export const MAX_TOOL_PAGES = 100;

/** Bounds of one listing. */
export interface ListingBounds {
  /** Time for all pages together, in ms. */
  readonly timeoutMs: number;
  /** Aborting any of them ends the listing (the page in flight rejects). */
  readonly signals?: readonly (AbortSignal | undefined)[];
  /** Asked before each page after the first: true ends the listing (the run ended). */
  readonly stop?: (() => boolean) | undefined;
  /** Called around each page request (the session counts requests in flight). */
  readonly around?: <T>(request: () => Promise<T>) => Promise<T>;
}

/** The tools read, and why the listing stopped early when it did. */
export interface ToolListing {
  readonly tools: Tool[];
  /**
   * `pages`: {@link MAX_TOOL_PAGES} pages and still a next cursor; `repeated_cursor`: a cursor
   * came back; `time`: `timeoutMs` passed after at least one page; `stopped`: `stop` said so.
   */
  readonly cut?: "pages" | "repeated_cursor" | "time" | "stopped";
}

/**
 * Reads every page of `tools/list`, within bounds: at most {@link MAX_TOOL_PAGES} pages, no
 * cursor followed twice, all pages within `timeoutMs` (after the first page, running out of time
 * ends the listing with the tools read so far) and `signals`. Each page gets a signal of
 * its own, linked to them and unlinked after (the SDK never removes the listener it adds).
 */
export async function listAllTools(
  listPage: ToolWire["listPage"],
  bounds: ListingBounds,
): Promise<ToolListing> {
  const started = Date.now();
  const around = bounds.around ?? ((request) => request());
  const signals = (bounds.signals ?? []).filter((s): s is AbortSignal => s !== undefined);
  const seen = new Set<string>();
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    if (page > 0 && bounds.stop?.()) return { tools, cut: "stopped" };
    const left = Math.max(1, bounds.timeoutMs - (Date.now() - started));
    let result: Awaited<ReturnType<typeof boundedPage>>;
    try {
      result = await around(() => boundedPage(listPage, cursor, left, signals));
    } catch (error) {
      // Out of time after some pages: the tools read so far are worth more than none.
      const timeUp = Date.now() - started >= bounds.timeoutMs && !signals.some((s) => s.aborted);
      if (page > 0 && timeUp) return { tools, cut: "time" };
      throw error;
    }
    tools.push(...result.tools);
    const next = result.nextCursor;
    if (next === undefined) return { tools };
    if (seen.has(next)) return { tools, cut: "repeated_cursor" };
    seen.add(next);
    cursor = next;
  }
  return { tools, cut: "pages" };
}

async function boundedPage(
  listPage: ToolWire["listPage"],
  cursor: string | undefined,
  timeout: number,
  outer: readonly AbortSignal[],
) {
  const controller = new AbortController();
  const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  const aborted = outer.find((s) => s.aborted);
  if (aborted !== undefined) controller.abort(aborted.reason);
  else for (const s of outer) s.addEventListener("abort", onAbort, { once: true });
  try {
    return await listPage(cursor, { signal: controller.signal, timeout });
  } finally {
    for (const s of outer) s.removeEventListener("abort", onAbort);
  }
}
