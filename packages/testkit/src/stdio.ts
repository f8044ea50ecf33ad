import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Scenario } from "./scenario.ts";

// Built (dist/*.js), the child runs the built entry point under plain node; from a source checkout
// (src/*.ts, the workspace's "source" condition) it runs the TypeScript through tsx, a dev
// dependency that an installed package does not have.
const FROM_SOURCE = import.meta.url.endsWith(".ts");

/** Absolute path of the child-process entry point (`stdio-main.js`, or `.ts` from source). */
export const STDIO_MAIN_PATH: string = fileURLToPath(
  new URL(FROM_SOURCE ? "./stdio-main.ts" : "./stdio-main.js", import.meta.url),
);

/**
 * `file:` URL of tsx's ESM loader (what `node --import tsx` loads) when the testkit runs from its
 * TypeScript sources; `undefined` when it runs built, where the child needs no loader.
 */
export const TSX_LOADER_URL: string | undefined = FROM_SOURCE
  ? pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href
  : undefined;

/**
 * From a source checkout, `GOVERNOR_TESTKIT_STDIO_BUNDLE` may name one JavaScript file built from
 * `stdio-main.ts` (all its imports bundled, with a source map beside it): children then run it
 * under plain node (`--enable-source-maps`) instead of the TypeScript through tsx, a fifth of the
 * start-up CPU. The repository's test setup
 * (`test/global-setup.ts`) bundles it for each vitest run. Ignored when the testkit runs built.
 */
function sourceBundle(): string | undefined {
  if (!FROM_SOURCE) return undefined;
  const bundle = process.env.GOVERNOR_TESTKIT_STDIO_BUNDLE;
  return bundle === undefined || bundle === "" ? undefined : bundle;
}

export interface StdioFaultServerOptions {
  /** Effects file (JSON Lines); counters go to `<effectsFile>.state.json`. */
  effectsFile?: string;
  /** Per-tool scripts (sent to the child as JSON). */
  scenario?: Scenario;
  /** Secret embedded in raw errors. */
  secret?: string;
  /** Run the low-level (JSON-RPC errors) server instead of the McpServer one. */
  lowlevel?: boolean;
  /** The child's stderr. Default `"ignore"` (an unread pipe could fill up and block the child). */
  stderr?: "pipe" | "ignore" | "inherit";
  /** Extra environment for the child (the SDK passes only a safe default set otherwise). */
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * Parameters for the SDK's `StdioClientTransport` that spawn the fault server as a child process:
 * `node …/dist/stdio-main.js …` when installed, `node --conditions=source --import <tsx>
 * …/src/stdio-main.ts …` from a source checkout (`node --enable-source-maps <bundle> …` when
 * `GOVERNOR_TESTKIT_STDIO_BUNDLE` names one, as in this repository's tests).
 */
export function stdioServerParams(options: StdioFaultServerOptions = {}): StdioServerParameters {
  const bundle = sourceBundle();
  const args =
    bundle !== undefined
      ? ["--enable-source-maps", bundle]
      : TSX_LOADER_URL === undefined
        ? [STDIO_MAIN_PATH]
        : ["--conditions=source", "--import", TSX_LOADER_URL, STDIO_MAIN_PATH];
  if (options.effectsFile !== undefined) args.push("--effects", options.effectsFile);
  if (options.scenario !== undefined) args.push("--scenario", JSON.stringify(options.scenario));
  if (options.secret !== undefined) args.push("--secret", options.secret);
  if (options.lowlevel) args.push("--lowlevel");
  return {
    command: process.execPath,
    args,
    stderr: options.stderr ?? "ignore",
    ...(options.env !== undefined ? { env: options.env } : {}),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
  };
}
