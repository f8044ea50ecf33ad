/**
 * The other build a side-by-side bench measures against: the directory in GOVERNOR_BASE, a copy
 * of a built checkout made by bench/snapshot-dist.sh. Used by bench/fingerprint-cost.ts,
 * bench/judge-ab.ts, bench/judge-diff.ts, bench/ledger-ab.ts and bench/mcp-ab.ts.
 */
import { pathToFileURL } from "node:url";

/** GOVERNOR_BASE, or an error naming `script` and what to set. */
export function baseDir(script: string): string {
  const base = process.env.GOVERNOR_BASE;
  if (base === undefined || base === "") {
    throw new Error(`${script}: set GOVERNOR_BASE to a copy made by bench/snapshot-dist.sh`);
  }
  return base;
}

/** Imports `entry` (e.g. `packages/core/dist/index.js`) of the base build in `base`. */
export async function importBase<T>(base: string, entry: string): Promise<T> {
  return (await import(pathToFileURL(`${base}/${entry}`).href)) as T;
}
