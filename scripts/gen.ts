/**
 * Writes the files made from code (scripts/generated.ts says which): the reasons table of
 * docs/stop-reasons.md and packages/core/policy.schema.json.
 *
 * Usage: pnpm gen [--check] [--root <dir>]
 *   --check        write nothing; exit 1 naming each file that differs from what code makes
 *   --root <dir>   the repository to write or check (default: the one holding this script)
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { firstDifference, generatedStates } from "./generated.ts";

const USAGE = "usage: pnpm gen [--check] [--root <dir>]";

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

let check = false;
let root = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--check") check = true;
  else if (arg === "--root") {
    const dir = args[++i];
    if (dir === undefined || dir.startsWith("--")) fail(`--root needs a directory\n${USAGE}`);
    root = dir;
  } else
    fail(`unknown argument ${JSON.stringify(arg)} (accepted: --check, --root <dir>)\n${USAGE}`);
}

let states: ReturnType<typeof generatedStates>;
try {
  states = generatedStates(root);
} catch (error) {
  fail(`pnpm gen: ${(error as Error).message}`);
}

let stale = 0;
for (const { file, current, expected } of states) {
  const difference = firstDifference(current, expected);
  if (difference === undefined) {
    process.stdout.write(`${file.path} is up to date\n`);
  } else if (check) {
    stale++;
    process.stderr.write(
      `${file.path} is stale: it is not what ${file.source} makes (${difference}); run pnpm gen and commit it\n`,
    );
  } else {
    writeFileSync(join(root, file.path), expected);
    process.stdout.write(`wrote ${file.path} from ${file.source}\n`);
  }
}
if (stale > 0) process.exit(1);
