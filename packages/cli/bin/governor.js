#!/usr/bin/env node
// Runs the built CLI when there is one; from a source checkout, runs the TypeScript directly.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const built = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
if (existsSync(built)) {
  await import(built);
} else {
  const source = fileURLToPath(new URL("../src/bin.ts", import.meta.url));
  const tsx = import.meta.resolve("tsx");
  const { status } = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", tsx, source, ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  process.exitCode = status ?? 1;
}
