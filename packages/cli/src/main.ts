import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { GovernorError, loadPolicy, type Policy } from "@governor/core";
import { classifyLine } from "./classify-lines.ts";
import { type CliIo, processIo } from "./io.ts";
import { parseOptions } from "./options.ts";
import { replayCommand } from "./replay.ts";
import { reportCommand } from "./report.ts";

const USAGE = `Usage: governor <command> [options]

Commands:
  demo [--json]              run a scripted agent against a failing MCP server three ways (naive,
                             blind retry, Governor) and compare calls, wasted calls, duplicate
                             writes, leaked secrets and tasks done
  classify [--policy FILE] [--explain] [--learned SOURCE [--prefix P]]
                             judge failures read as JSON Lines on stdin, one JSON line out per
                             line; --explain adds which step decided and how sure it is;
                             --learned judges with what runs learned (a redis:// URL or a
                             snapshot from learned list --json) and shows learned overrides
  learned list|reset --store SOURCE
                             what runs learned from outcomes, per server, tool and fingerprint,
                             and the demotions it causes (list [--policy FILE] [--limit N]
                             [--json]); forget it (reset --store URL [--server S [--tool T]])
  check FILE                 validate a policy file; print the resolved policy or each bad field
  proxy [options] -- COMMAND [ARGS...]
                             govern an MCP server for any host: speaks MCP on stdio (or
                             --listen PORT) and runs every tool call through Governor
                             (--policy FILE | --preset filesystem|everything|git,
                             --trust-annotations --events FILE --server NAME --upstream URL
                             --window 10m --stop-ttl 10m --timeout 60s
                             --store sqlite:PATH|redis://HOST with --server NAME;
                             see docs/proxy.md)
  report LOG... [--json]     summarize JSON Lines event logs (- for stdin): runs stopped by
                             reason, top fingerprints, retries, wasted calls [--top N]
                             [--html FILE [--replay --policy FILE]]: a page of charts
  replay LOG... --policy FILE [--json]
                             re-decide every recorded failure of event logs under another policy
                             and print what changes: decisions, runs stopped earlier or later,
                             calls saved
  help                       show this text
  --version, -v              print the CLI's version
`;

/** The CLI's version, from its package.json (one level above src/ and dist/ alike). */
function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

async function readPolicy(file: string | undefined): Promise<Policy> {
  if (file === undefined) return loadPolicy({});
  return loadPolicy(await readFile(file, "utf8"));
}

async function classifyCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseOptions({
    args,
    options: {
      policy: { type: "string" },
      explain: { type: "boolean", default: false },
      learned: { type: "string" },
      prefix: { type: "string" },
    },
    strict: true,
  });
  const policy = await readPolicy(values.policy);
  const learned =
    values.learned === undefined
      ? undefined
      : await import("./learned.ts").then(async (m) =>
          m.learnedLookup(
            await m.readLearned(values.learned as string, values.prefix),
            policy,
            Date.now(),
          ),
        );
  let status = 0;
  let n = 0;
  const lines = createInterface({ input: io.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const raw of lines) {
    n += 1;
    if (raw.trim() === "") continue;
    const out = classifyLine(raw, n, policy, {
      explain: values.explain,
      ...(learned !== undefined && { learned }),
    });
    if ("error" in out) status = 1;
    io.stdout.write(`${JSON.stringify(out)}\n`);
  }
  return status;
}

async function checkCommand(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseOptions({ args, allowPositionals: true, strict: true });
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) {
    io.stderr.write("governor check: expected exactly one policy file\n");
    return 2;
  }
  try {
    const policy = await readPolicy(file);
    io.stdout.write(`${JSON.stringify(policy, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (GovernorError.isInstance(err) && err.code === "invalid_policy") {
      io.stdout.write(`${file}: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/** Runs the CLI on `io` (the process's streams by default); returns the exit status. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "demo": {
        // Loaded on demand: it pulls in the MCP SDK and the testkit, which other commands skip.
        const { demoCommand } = await import("./demo.ts");
        return await demoCommand(rest, io);
      }
      case "proxy": {
        const { proxyCommand } = await import("./proxy/command.ts");
        return await proxyCommand(rest, io);
      }
      case "classify":
        return await classifyCommand(rest, io);
      case "check":
        return await checkCommand(rest, io);
      case "report":
        return await reportCommand(rest, io);
      case "replay":
        return await replayCommand(rest, io);
      case "learned": {
        // Loaded on demand: it pulls in the Redis client.
        const { learnedCommand } = await import("./learned.ts");
        return await learnedCommand(rest, io);
      }
      case "--version":
      case "-v":
        io.stdout.write(`${cliVersion()}\n`);
        return 0;
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(USAGE);
        return 0;
      case undefined:
        io.stderr.write(`governor: no command given\n\n${USAGE}`);
        return 2;
      default:
        io.stderr.write(`governor: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    io.stderr.write(`governor ${command}: ${message}\n`);
    return GovernorError.isInstance(err) ? 1 : 2;
  }
}
