import { appendFileSync, existsSync, readFileSync } from "node:fs";

/** One committed write, as appended (one JSON line) to the effects file. */
export interface Effect {
  /** The tool that committed the write. */
  tool: string;
  /** The idempotency key the call carried (`_meta` first, then an `idempotency_key` argument). */
  key?: string;
  /** The call's arguments, as received. */
  args: Record<string, unknown>;
  /** ISO-8601 time of the commit. */
  at: string;
}

/** Reads an effects file (JSON Lines). A missing file has no effects; blank lines are skipped. */
export function readEffects(file: string): Effect[] {
  if (!existsSync(file)) return [];
  const effects: Effect[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    effects.push(JSON.parse(line) as Effect);
  }
  return effects;
}

/** Appends one effect line (synchronously: the line is on disk before the tool answers or exits). */
export function appendEffect(file: string, effect: Effect): void {
  appendFileSync(file, `${JSON.stringify(effect)}\n`);
}

/** The file holding the per-tool call counters of a server whose effects go to `effectsFile`. */
export function stateFileFor(effectsFile: string): string {
  return `${effectsFile}.state.json`;
}

/** Arguments as canonical JSON: keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      out[key] = sortKeys((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}

/**
 * The identity of a write: the tool plus its idempotency key when it has one, else the tool plus
 * its canonical arguments (without any `idempotency_key` argument).
 */
export function effectIdentity(effect: Effect): string {
  if (effect.key !== undefined) return `${effect.tool}\u0000key\u0000${effect.key}`;
  const { idempotency_key: _ignored, ...rest } = effect.args;
  return `${effect.tool}\u0000args\u0000${canonicalJson(rest)}`;
}

/**
 * How many effects repeat an earlier write (same tool and key, or same tool and arguments when
 * unkeyed). Zero means no write was duplicated.
 */
export function countDuplicateWrites(effects: readonly Effect[], tool?: string): number {
  const seen = new Set<string>();
  let duplicates = 0;
  for (const effect of effects) {
    if (tool !== undefined && effect.tool !== tool) continue;
    const id = effectIdentity(effect);
    if (seen.has(id)) duplicates++;
    else seen.add(id);
  }
  return duplicates;
}
