import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";

/** A log file as a byte stream; `-` is `stdin`. */
export function openLog(
  file: string,
  stdin: Readable = process.stdin,
): AsyncIterable<Buffer | string> {
  return file === "-" ? stdin : createReadStream(file);
}

/** Longer lines are skipped unread: no event line comes near it (the sink caps its lines). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * The lines of a byte stream, without their `\n`, holding one line at a time: a log of any size
 * is read in bounded memory. A line longer than `maxBytes` is never assembled: it is reported
 * through `onTooLong` and yielded as an empty line, so line numbers stay right. (`node:readline`
 * would build any line whole, however long.)
 */
export async function* splitLines(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
  onTooLong: (message: string) => void,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let n = 0;
  const take = (): string => {
    n += 1;
    const line = tooLong ? "" : decoder.decode(Buffer.concat(parts, size));
    if (tooLong) onTooLong(`line ${n}: longer than ${maxBytes} bytes, skipped`);
    parts = [];
    size = 0;
    tooLong = false;
    return line;
  };
  for await (const data of input) {
    const chunk = typeof data === "string" ? Buffer.from(data) : data;
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!tooLong && size + (end - start) > maxBytes) {
        tooLong = true;
        parts = [];
        size = 0;
      }
      if (!tooLong) {
        parts.push(chunk.subarray(start, end));
        size += end - start;
      }
      if (newline === -1) break;
      yield take();
      start = newline + 1;
    }
  }
  if (size > 0 || tooLong) yield take();
}

/** The lines of several logs read one after the other, and where the last line yielded is. */
export interface LogLines {
  readonly lines: AsyncGenerator<string>;
  /** `FILE: line N`: the file and line number of the line yielded last. */
  where(): string;
}

/**
 * Reads logs in order (`-` is stdin), one line at a time. A message about a line (`line N: ...`
 * from a reader that counts across all files) is named by `where()` while that line is the last
 * one yielded.
 */
export function readLogs(
  files: readonly string[],
  complain: (message: string) => void,
  open: (file: string) => AsyncIterable<Buffer | string>,
): LogLines {
  let file = "";
  let n = 0;
  async function* lines(): AsyncGenerator<string> {
    for (const f of files) {
      file = f;
      n = 0;
      try {
        for await (const line of splitLines(open(f), MAX_LINE_BYTES, (m) =>
          complain(`${f}: ${m}`),
        )) {
          n += 1;
          yield line;
        }
      } catch (error) {
        throw unreadable(f, error);
      }
    }
  }
  return { lines: lines(), where: () => `${file}: line ${n}` };
}

/**
 * A log that could not be read, named: some of Node's messages name the file (`ENOENT: …, open
 * 'x'`), others do not (`EISDIR: illegal operation on a directory, read`).
 */
function unreadable(file: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof Error) || typeof code !== "string") return error;
  return Object.assign(new Error(`${file}: ${error.message}`, { cause: error }), { code });
}

/** `line N: message` → `message`, to be named again by {@link LogLines.where}. */
export function withoutLineNumber(message: string): string {
  return message.replace(/^line \d+: /, "");
}
