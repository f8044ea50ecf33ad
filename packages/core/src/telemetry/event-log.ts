import { closeSync, openSync, writeSync } from "node:fs";
import { GovernorError } from "../errors.ts";
import { eventLine, MIN_EVENT_LINE } from "./event-limits.ts";
import { eventSchema } from "./event-schema.ts";
import { EVENT_SCHEMA_VERSION, type GovernorEvent } from "./events.ts";

/**
 * Where a JSON Lines sink writes: a file path (appended to, each line synchronously: it is on disk
 * when `write` returns), a writable stream (not ended by the
 * sink), or any object with a `write(line)` method (each line ends with `\n`; a returned promise
 * is awaited by `close`).
 */
export type JsonlSinkTarget = string | NodeJS.WritableStream | { write(line: string): unknown };

/** Options of {@link createJsonlSink}. */
export interface JsonlSinkOptions {
  /** Called with each write error; the sink keeps going. Errors it throws are ignored. */
  onError?: (error: unknown) => void;
  /**
   * The longest line written, `\n` not counted. A longer event has its strings cut and its run
   * summary's fingerprints thinned until it fits, and gets `"truncated": true`; the JSON is never
   * cut. At least 4096.
   * @default 16384
   */
  maxLineLength?: number;
}

const DEFAULT_MAX_LINE = 16_384;

/** A JSON Lines event sink: one line per event. */
export interface JsonlSink {
  /** Writes one event as one JSON line. Never throws; an unbound function, fit for `onEvent`. */
  readonly write: (event: GovernorEvent) => void;
  /**
   * Waits for pending writes and, for a file path, closes the file. Later writes are dropped.
   * Never rejects: look at `lastError`.
   */
  close(): Promise<void>;
  /** The last error met while writing, or `undefined`. */
  readonly lastError: unknown;
}

interface Emitter {
  on(event: "error", listener: (error: unknown) => void): unknown;
  removeListener(event: "error", listener: (error: unknown) => void): unknown;
}

function isEmitter(value: object): value is Emitter {
  const v = value as Partial<Record<"on" | "removeListener", unknown>>;
  return typeof v.on === "function" && typeof v.removeListener === "function";
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Creates an event sink writing one JSON line per event (schema `"v": 1`, see
 * docs/telemetry.md), for `governor report` to read; no line is longer than `maxLineLength`. It never throws into the agent loop: an
 * error is kept in `lastError` and passed to `onError`.
 *
 * @example
 * const sink = createJsonlSink("governor-events.jsonl");
 * const governor = createGovernor(policy, { onEvent: sink.write });
 * // ... at shutdown
 * await sink.close();
 */
export function createJsonlSink(
  target: JsonlSinkTarget,
  options: JsonlSinkOptions = {},
): JsonlSink {
  const maxLineLength = options.maxLineLength ?? DEFAULT_MAX_LINE;
  if (!Number.isInteger(maxLineLength) || maxLineLength < MIN_EVENT_LINE) {
    throw new GovernorError(
      "invalid_options",
      `maxLineLength must be a whole number >= ${MIN_EVENT_LINE}, got ${String(options.maxLineLength)}`,
    );
  }
  let lastError: unknown;
  let closed = false;
  const pending = new Set<Promise<unknown>>();
  const fail = (error: unknown): void => {
    lastError = error;
    try {
      options.onError?.(error);
    } catch {
      // The host's error hook must not break the agent loop either.
    }
  };

  // A file is written synchronously, each line in one append: a line is on disk when `write`
  // returns, so a process that exits or crashes without `close()` loses none (a write stream's
  // buffer was lost whole), and lines of several processes appending to one file never mix.
  let fd: number | undefined;
  if (typeof target === "string") {
    try {
      fd = openSync(target, "a");
    } catch (error) {
      fail(error);
      closed = true;
    }
  }
  // A stream's overloaded `write` also takes one string: treat every other target alike.
  const out: { write(line: string): unknown } | undefined =
    typeof target === "string" ? undefined : target;
  // Without a listener a stream's error event would crash the process.
  const emitter = out !== undefined && isEmitter(out) ? out : undefined;
  emitter?.on("error", fail);

  const write = (event: GovernorEvent): void => {
    if (closed) return;
    try {
      const line = eventLine(event, maxLineLength);
      if (line === undefined) {
        fail(new RangeError(`a ${event.type} event does not fit in ${maxLineLength} characters`));
        return;
      }
      if (fd !== undefined) {
        appendLine(fd, `${line}\n`);
        return;
      }
      if (out === undefined) return;
      const result = out.write(`${line}\n`);
      if (isPromiseLike(result)) {
        const tracked = Promise.resolve(result).then(undefined, fail);
        pending.add(tracked);
        void tracked.finally(() => pending.delete(tracked));
      }
    } catch (error) {
      fail(error);
    }
  };

  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await Promise.allSettled([...pending]);
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch (error) {
        if (lastError === undefined) fail(error);
      }
      fd = undefined;
    } else {
      emitter?.removeListener("error", fail);
    }
  };

  return {
    write,
    close,
    get lastError() {
      return lastError;
    },
  };
}

/** Writes all of `text` at the end of the file `fd` was opened (`a`) on. */
function appendLine(fd: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** What {@link parseEvents} read: the valid events, and one message per bad line. */
export interface ParsedEvents {
  readonly events: GovernorEvent[];
  /** `line N: ...`, with the path of each bad field. */
  readonly errors: string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads one line of an event log: the event, or what is wrong with the line (with the path of
 * each bad field). A blank line yields `undefined`; a trailing `\r` is ignored. Shared by
 * {@link parseEvents}, `summarizeEventLines` and `governor replay`.
 */
export function parseEventLine(
  raw: string,
): GovernorEvent | { readonly error: string } | undefined {
  const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
  if (line.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { error: `not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  if (isRecord(value) && "v" in value && value.v !== EVENT_SCHEMA_VERSION) {
    return {
      error: `unsupported event version ${JSON.stringify(value.v)} (this reader knows ${EVENT_SCHEMA_VERSION})`,
    };
  }
  const result = eventSchema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) =>
    issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`,
  );
  return { error: issues.join("; ") };
}

/**
 * Reads a JSON Lines event log (what {@link createJsonlSink} writes) held in one string. Blank
 * lines are skipped; every other line must be one event of schema version 1. Bad lines do not stop
 * the reading: each yields an error `line N: ...` (1-based) and the valid lines are returned.
 * For a log too large for memory, use `summarizeEventLines` on a stream of its lines.
 *
 * @example
 * const { events, errors } = parseEvents(await readFile("governor-events.jsonl", "utf8"));
 */
export function parseEvents(text: string): ParsedEvents {
  const events: GovernorEvent[] = [];
  const errors: string[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const parsed = parseEventLine(raw);
    if (parsed === undefined) continue;
    if ("error" in parsed) errors.push(`line ${index + 1}: ${parsed.error}`);
    else events.push(parsed);
  }
  return { events, errors };
}
