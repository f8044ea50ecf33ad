import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsx = import.meta.resolve("tsx");

/** Runs the governor CLI from source, as `pnpm --silent governor` does. */
export function governor(
  args: string[],
  input?: string | Buffer,
): { stdout: string; stderr: string; status: number | null } {
  const result = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", tsx, "packages/cli/src/bin.ts", ...args],
    { cwd: root, input: input ?? "", encoding: "utf8", timeout: 60_000 },
  );
  return { stdout: result.stdout, stderr: result.stderr, status: result.status };
}
