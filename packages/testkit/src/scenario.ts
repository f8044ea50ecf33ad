import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { appendEffect, canonicalJson, type Effect, readEffects, stateFileFor } from "./effects.ts";

/**
 * What one call of a tool does, before or instead of the tool's own behaviour.
 *
 * - `ok`: the tool behaves normally (also what every call past the end of a script does).
 * - `error`: an `isError` result with `text` (and `structured` as `structuredContent`); no effect.
 * - `status`: an `isError` result for an HTTP-like status (`503 Service Unavailable`, `429 Too Many
 *   Requests: retry after N seconds`) with `structuredContent.error.{status,retryAfterMs}` and the
 *   draft `_meta["io.modelcontextprotocol/toolFailure"]`; no effect.
 * - `hang`: waits `ms` (ends early when the request is cancelled), then behaves normally.
 * - `hang_after_commit`: the tool runs (a write is committed), then the answer waits `ms` (ends
 *   early when the request is cancelled): a write whose response comes too late.
 * - `exit`: the server goes away before the tool runs (stdio: the process exits; HTTP: the
 *   request's connection is destroyed; in-process: the server closes its transport).
 * - `drop_after_commit`: the tool runs (a write is committed), then the response is lost the same
 *   way as `exit`.
 * - `malformed`: the tool runs, then its response is replaced on the wire by a result that fails
 *   the SDK's `CallToolResult` schema (`{"content": "not an array"}`).
 */
export type FaultStep =
  | { kind: "ok" }
  | { kind: "error"; text: string; structured?: unknown }
  | { kind: "status"; status: number; retryAfterSeconds?: number }
  | { kind: "hang"; ms: number }
  | { kind: "hang_after_commit"; ms: number }
  | { kind: "exit" }
  | { kind: "drop_after_commit" }
  | { kind: "malformed" };

/** Per tool name, what its 1st, 2nd, … call does. Calls past the end of the list are `ok`. */
export type Scenario = Record<string, FaultStep[]>;

export const FaultStepSchema: z.ZodType<FaultStep> = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("ok") }),
  z.object({ kind: z.literal("error"), text: z.string(), structured: z.unknown().optional() }),
  z.object({
    kind: z.literal("status"),
    status: z.number().int().min(100).max(599),
    retryAfterSeconds: z.number().min(0).optional(),
  }),
  z.object({ kind: z.literal("hang"), ms: z.number().min(0) }),
  z.object({ kind: z.literal("hang_after_commit"), ms: z.number().min(0) }),
  z.object({ kind: z.literal("exit") }),
  z.object({ kind: z.literal("drop_after_commit") }),
  z.object({ kind: z.literal("malformed") }),
]) as z.ZodType<FaultStep>;

export const ScenarioSchema: z.ZodType<Scenario> = z.record(z.string(), z.array(FaultStepSchema));

/** Parses a scenario given as JSON text (e.g. the `--scenario` argument); throws on a bad shape. */
export function parseScenario(json: string): Scenario {
  return ScenarioSchema.parse(JSON.parse(json));
}

/**
 * Scripts that apply unless the scenario names the tool: `flaky_fetch` answers 503 twice, then
 * succeeds; `write_then_drop` loses its first response after committing.
 */
export const DEFAULT_SCENARIO: Readonly<Scenario> = Object.freeze({
  flaky_fetch: [
    { kind: "status", status: 503 },
    { kind: "status", status: 503 },
  ],
  write_then_drop: [{ kind: "drop_after_commit" }],
});

export interface FaultStateOptions {
  /** Append one JSON line per committed write here; counters go to `<effectsFile>.state.json`. */
  effectsFile?: string;
  /** Per-tool scripts; merged over {@link DEFAULT_SCENARIO} (a tool named here replaces its default). */
  scenario?: Scenario;
}

/** The result of committing a write. */
export interface Commit {
  /** False when the key was already committed: nothing new was recorded. */
  fresh: boolean;
  /** 1-based position of the (original) write among this tool's writes. */
  ordinal: number;
  /** The (original) effect. */
  effect: Effect;
}

interface PersistedState {
  counters: Record<string, number>;
}

/**
 * Everything a fault server remembers between calls: per-tool call counters (the scenario
 * position), committed effects and note statuses. One state can back many server instances (the
 * HTTP server shares one across sessions). With an `effectsFile`, counters and effects are
 * persisted, so a restarted stdio server continues its script and still deduplicates keys.
 *
 * Counters are per tool name (not per arguments), and count calls that reached the tool (calls
 * refused by input-schema validation never do).
 */
export class FaultState {
  readonly effectsFile: string | undefined;
  readonly scenario: Scenario;
  private readonly counters: Record<string, number>;
  private readonly effectList: Effect[];
  /** Status per note id (seed notes and created notes). */
  readonly statuses = new Map<string, string>();

  constructor(options: FaultStateOptions = {}) {
    this.effectsFile = options.effectsFile;
    this.scenario = { ...DEFAULT_SCENARIO, ...(options.scenario ?? {}) };
    this.counters = {};
    this.effectList = [];
    if (this.effectsFile !== undefined) {
      this.effectList.push(...readEffects(this.effectsFile));
      const stateFile = stateFileFor(this.effectsFile);
      if (existsSync(stateFile)) {
        const persisted = JSON.parse(readFileSync(stateFile, "utf8")) as PersistedState;
        Object.assign(this.counters, persisted.counters);
      }
      for (const effect of this.effectList) {
        if (effect.tool === "set_status") {
          this.statuses.set(String(effect.args.id), String(effect.args.status));
        }
      }
    }
  }

  /** Counts one more call of `tool` and returns what it must do (persisted before returning). */
  nextStep(tool: string): FaultStep {
    const n = (this.counters[tool] ?? 0) + 1;
    this.counters[tool] = n;
    this.persist();
    return this.scenario[tool]?.[n - 1] ?? { kind: "ok" };
  }

  /** How many calls of `tool` reached it so far. */
  calls(tool: string): number {
    return this.counters[tool] ?? 0;
  }

  /** A copy of the committed effects, in order. */
  effects(): Effect[] {
    return [...this.effectList];
  }

  /** The first committed effect of `tool` with this key, if any. */
  findByKey(tool: string, key: string): { effect: Effect; ordinal: number } | undefined {
    let ordinal = 0;
    for (const effect of this.effectList) {
      if (effect.tool !== tool) continue;
      ordinal++;
      if (effect.key === key) return { effect, ordinal };
    }
    return undefined;
  }

  /**
   * Records a write. With `dedupe` and a key already committed for this tool, records nothing and
   * returns the original (`fresh: false`).
   */
  commit(
    tool: string,
    args: Record<string, unknown>,
    key: string | undefined,
    dedupe: boolean,
  ): Commit {
    if (dedupe && key !== undefined) {
      const found = this.findByKey(tool, key);
      if (found) return { fresh: false, ...found };
    }
    const effect: Effect = {
      tool,
      ...(key !== undefined ? { key } : {}),
      args,
      at: new Date().toISOString(),
    };
    this.effectList.push(effect);
    if (this.effectsFile !== undefined) appendEffect(this.effectsFile, effect);
    const ordinal = this.effectList.filter((e) => e.tool === tool).length;
    return { fresh: true, ordinal, effect };
  }

  private persist(): void {
    if (this.effectsFile === undefined) return;
    const state: PersistedState = { counters: this.counters };
    writeFileSync(stateFileFor(this.effectsFile), JSON.stringify(state));
  }
}

/** Same arguments, ignoring any `idempotency_key` argument. */
export function sameArguments(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const { idempotency_key: _a, ...restA } = a;
  const { idempotency_key: _b, ...restB } = b;
  return canonicalJson(restA) === canonicalJson(restB);
}
