/**
 * Entry point of the fault server as a child process over stdio:
 *
 *   node --conditions=source --import tsx stdio-main.ts [--effects FILE] [--scenario JSON]
 *     [--secret S] [--lowlevel]
 *
 * Environment fallbacks: GOVERNOR_TESTKIT_EFFECTS, GOVERNOR_TESTKIT_SCENARIO,
 * GOVERNOR_TESTKIT_SECRET, GOVERNOR_TESTKIT_LOWLEVEL=1. Stdout carries JSON-RPC only (and the
 * junk line of `junk_stdout`); diagnostics go to stderr. The process exits when stdin ends, and
 * with status 1 when a tool makes it go away (`exit_now`, `exit`, `drop_after_commit`).
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createFaultServer } from "./fault-server.ts";
import { createLowLevelServer } from "./lowlevel-server.ts";
import { parseScenario } from "./scenario.ts";

/** Exit status of the child when a tool makes it go away mid-call. */
const EXIT_MID_CALL_STATUS = 1;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      effects: { type: "string" },
      scenario: { type: "string" },
      secret: { type: "string" },
      lowlevel: { type: "boolean" },
    },
    strict: true,
  });
  const env = process.env;
  const effectsFile = values.effects ?? env.GOVERNOR_TESTKIT_EFFECTS;
  const scenarioJson = values.scenario ?? env.GOVERNOR_TESTKIT_SCENARIO;
  const secret = values.secret ?? env.GOVERNOR_TESTKIT_SECRET;
  const lowlevel = values.lowlevel ?? env.GOVERNOR_TESTKIT_LOWLEVEL === "1";

  const transport = new StdioServerTransport();
  const server = lowlevel
    ? createLowLevelServer(secret !== undefined ? { secret } : {})
    : createFaultServer({
        ...(effectsFile !== undefined ? { effectsFile } : {}),
        ...(scenarioJson !== undefined ? { scenario: parseScenario(scenarioJson) } : {}),
        ...(secret !== undefined ? { secret } : {}),
        onExit: () => process.exit(EXIT_MID_CALL_STATUS),
        writeRaw: (line) => {
          process.stdout.write(`${line}\n`);
        },
      });
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("close", () => process.exit(0));
  await server.connect(transport);
}

main().catch((error: unknown) => {
  process.stderr.write(`governor fault server: ${String(error)}\n`);
  process.exit(2);
});
