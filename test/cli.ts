/**
 * The governor CLI for tests, two ways. {@link governor} runs a command in the test's own process
 * (`main()` on in-memory streams): what most tests need, without a second of `node --import tsx`
 * start-up per command. {@link governorProcess} starts `packages/cli/src/bin.ts` as
 * `pnpm --silent governor` does: each command keeps at least one test that way, for its exit
 * code and its wiring to the process's stdin, stdout and stderr.
 */
import { spawn } from "node:child_process";
import { PassThrough, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { main } from "../packages/cli/src/main.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const tsx = import.meta.resolve("tsx");

/** What a command printed and its exit status. */
export interface Ran {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function collector(): { stream: Writable; text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** What a pipe holds at once on Linux: a child's stdin reads its input in chunks of this size. */
const PIPE_CHUNK = 64 * 1024;

/**
 * Runs `governor ARGS` in this process, with `input` on its stdin (empty by default), handed over
 * in the chunks a pipe would deliver, so a line still spans several reads.
 */
export async function governor(args: string[], input?: string | Buffer): Promise<Ran> {
  const bytes = typeof input === "string" ? Buffer.from(input) : (input ?? Buffer.alloc(0));
  const stdin = new PassThrough();
  for (let at = 0; at < bytes.length; at += PIPE_CHUNK) {
    stdin.write(bytes.subarray(at, at + PIPE_CHUNK));
  }
  stdin.end();
  const stdout = collector();
  const stderr = collector();
  const status = await main(args, { stdin, stdout: stdout.stream, stderr: stderr.stream });
  return { status, stdout: stdout.text(), stderr: stderr.text() };
}

/**
 * Runs `governor ARGS` as a child process from source (`node [NODE_FLAGS] --conditions=source
 * --import tsx packages/cli/src/bin.ts ARGS`), with `input` on its stdin.
 */
export function governorProcess(
  args: string[],
  input?: string | Buffer,
  nodeFlags: string[] = [],
): Promise<Ran> {
  return run(
    process.execPath,
    [...nodeFlags, "--conditions=source", "--import", tsx, "packages/cli/src/bin.ts", ...args],
    input,
  );
}

/**
 * Runs the package's bin, `packages/cli/bin/governor.js ARGS`, as a shell does: by its shebang,
 * with the `node` on PATH (it runs `dist/` when built, else the sources through tsx).
 */
export function governorBin(args: string[], input?: string | Buffer): Promise<Ran> {
  return run(
    fileURLToPath(new URL("../packages/cli/bin/governor.js", import.meta.url)),
    args,
    input,
  );
}

function run(command: string, args: string[], input: string | Buffer | undefined): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    // A child that exits before reading all of its input is not the test's failure.
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
  });
}
