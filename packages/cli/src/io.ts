import type { Readable, Writable } from "node:stream";

/**
 * Where a command reads its input and writes its output and messages: the process's own streams
 * when `governor` runs ({@link processIo}); in-memory streams when a test runs a command in its
 * own process.
 */
export interface CliIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly stderr: Writable;
}

/** The process's stdin, stdout and stderr. */
export function processIo(): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}
