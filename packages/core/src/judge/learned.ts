// Learning from outcomes (issue 12 item 5): what followed each decision on a failure, kept per
// server, tool and fingerprint as exponentially decayed counts, and the demotions they justify.
// Pure: no clock, no store; the run records and reads, the store adds atomically (store.ts).
import type { Action } from "../types.ts";
import { boundName } from "./bound-name.ts";

/** The decisions whose outcome is learned: a retry, a correction by the model, a switch of tool. */
export type LearnedDecision = "retry" | "correct" | "switch";

/**
 * What followed a decision: it paid off (the retry recovered, the corrected call or the
 * alternative succeeded) or it was futile (retries ran out, the same failure came back, the
 * alternative failed too).
 */
export type OutcomeField = `${LearnedDecision}_${"paid" | "futile"}`;

/** Every outcome field, in a fixed order. */
export const OUTCOME_FIELDS = [
  "retry_paid",
  "retry_futile",
  "correct_paid",
  "correct_futile",
  "switch_paid",
  "switch_futile",
] as const satisfies readonly OutcomeField[];

/** Decayed counts of one server, tool and fingerprint, as of `updatedAt`. Plain JSON. */
export interface OutcomeCounts {
  readonly counts: Readonly<Record<string, number>>;
  /** Epoch ms of the last addition: the counts are as of then. */
  readonly updatedAt: number;
}

/** How learned counts turn into demotions; resolved from the policy's `learning`. */
export interface LearningSettings {
  /** Learn and apply demotions for this tool. */
  readonly enabled: boolean;
  /** Weighted outcomes of a decision needed before it may be demoted. */
  readonly minEvidence: number;
  /** A decision paid off at most this fraction of the time "never pays off". */
  readonly maxPayoffRate: number;
  /** Half-life of the counts, in ms: an outcome this old weighs half. */
  readonly halfLifeMs: number;
  /** How long a record nobody adds to is kept, in ms. */
  readonly ttlMs: number;
}

/** The defaults of the policy's `learning`. */
export const LEARNING_DEFAULTS: LearningSettings = {
  enabled: true,
  minEvidence: 4,
  maxPayoffRate: 0.1,
  halfLifeMs: 86_400_000,
  ttlMs: 7 * 86_400_000,
};

/**
 * The weight `count` recorded at `updatedAt` has at `now`: halved every `halfLifeMs`. A `now`
 * before `updatedAt` (another worker's clock behind) weighs it fully, never more.
 */
export function decayed(count: number, updatedAt: number, now: number, halfLifeMs: number): number {
  if (now <= updatedAt) return count;
  return count * 2 ** (-(now - updatedAt) / halfLifeMs);
}

/** The counts decayed to `now`. */
export function countsAt(
  record: OutcomeCounts | undefined,
  now: number,
  halfLifeMs: number,
): Record<OutcomeField, number> {
  const out = {} as Record<OutcomeField, number>;
  for (const field of OUTCOME_FIELDS) {
    const count = record?.counts[field];
    out[field] =
      typeof count === "number" && count > 0
        ? decayed(count, record?.updatedAt ?? now, now, halfLifeMs)
        : 0;
  }
  return out;
}

/**
 * Adds `by` to one field: every count decays to `now` first, then the record is as of `now` (or
 * of its own later time, when `now` is behind it). What a store's `addOutcome` does atomically.
 */
export function addToCounts(
  record: OutcomeCounts | undefined,
  field: string,
  by: number,
  now: number,
  halfLifeMs: number,
): OutcomeCounts {
  const at = record === undefined ? now : Math.max(now, record.updatedAt);
  const counts: Record<string, number> = {};
  for (const [name, count] of Object.entries(record?.counts ?? {})) {
    if (typeof count === "number")
      counts[name] = decayed(count, record?.updatedAt ?? at, at, halfLifeMs);
  }
  counts[field] = (counts[field] ?? 0) + by;
  return { counts, updatedAt: at };
}

/** What a learned override says: which decision it replaced and on what evidence. */
export interface LearnedOverride {
  /** The decision the failure would have had. */
  readonly from: "retry_dependency" | "correct_arguments" | "switch_tool";
  /** The decision it has instead: only ever toward stopping. */
  readonly to: "switch_tool" | "stop";
  /** Weighted outcomes of `from` that paid off, decayed to now. */
  readonly paid: number;
  /** Weighted outcomes of `from` that were futile, decayed to now. */
  readonly futile: number;
}

const DECISION_OF: Partial<Record<Action, LearnedDecision>> = {
  retry_dependency: "retry",
  correct_arguments: "correct",
  switch_tool: "switch",
};

/**
 * How far below `minEvidence` the decayed total may be and still count: outcomes recorded
 * moments ago have already decayed a hair, so four outcomes never weigh quite 4.
 */
const EVIDENCE_SLACK = 0.05;

/** Whether a decision's learned outcomes show that it never pays off. */
export function neverPaysOff(
  counts: Readonly<Record<OutcomeField, number>>,
  decision: LearnedDecision,
  settings: Pick<LearningSettings, "minEvidence" | "maxPayoffRate">,
): boolean {
  const paid = counts[`${decision}_paid`];
  const futile = counts[`${decision}_futile`];
  const total = paid + futile;
  return total >= settings.minEvidence - EVIDENCE_SLACK && paid <= settings.maxPayoffRate * total;
}

/** What {@link learnedDemotion} needs to know about the failure and the tool. */
export interface DemotionInput {
  /** The action the failure would get without learning. */
  readonly action: Action;
  /** The learned counts of this server, tool and fingerprint, decayed to now. */
  readonly counts: Readonly<Record<OutcomeField, number>>;
  readonly settings: Pick<LearningSettings, "enabled" | "minEvidence" | "maxPayoffRate">;
  /** The policy names alternatives for the tool. */
  readonly hasAlternatives: boolean;
  /**
   * Another tool must not be tried instead: the call may have written (a mutation whose outcome
   * is unknown). A retry that never recovers then stops.
   */
  readonly switchUnsafe: boolean;
}

/**
 * The demotion learned outcomes justify, if any. Only ever toward stopping: a retry that never
 * recovers becomes a switch (when the policy names alternatives whose switches have not been
 * futile too, and switching is safe) or a stop; a correction or a switch that never pays off
 * becomes a stop. Nothing is ever moved toward a retry. The caller keeps policy rules out.
 */
export function learnedDemotion(input: DemotionInput): LearnedOverride | undefined {
  if (!input.settings.enabled) return undefined;
  const from = input.action;
  const decision = DECISION_OF[from];
  if (decision === undefined) return undefined;
  if (!neverPaysOff(input.counts, decision, input.settings)) return undefined;
  const paid = input.counts[`${decision}_paid`];
  const futile = input.counts[`${decision}_futile`];
  const base = { from: from as LearnedOverride["from"], paid, futile };
  if (
    decision === "retry" &&
    input.hasAlternatives &&
    !input.switchUnsafe &&
    !neverPaysOff(input.counts, "switch", input.settings)
  ) {
    return { ...base, to: "switch_tool" };
  }
  return { ...base, to: "stop" };
}

/**
 * The store key of a server, tool and fingerprint, and of the scope it was learned in (a tenant:
 * see {@link learningScopeOf}). Each part is URI-encoded, so `/` separates them and a prefix of
 * whole parts selects a server or a tool ({@link learnedPrefix}), in every scope. Without a scope
 * the key has three parts and is shared by every run on the store.
 */
export function learnedKey(
  server: string | undefined,
  tool: string,
  fingerprint: string,
  scope?: string,
): string {
  // The same failure is read and written again and again (each run that meets it): the last key
  // of each fingerprint is kept, with the server, tool and scope it was made for.
  const last = recentKeys.get(fingerprint);
  if (last !== undefined && last.server === server && last.tool === tool && last.scope === scope) {
    return last.key;
  }
  const base = `${learnedPrefix(server, tool)}${encodeURIComponent(fingerprint)}`;
  const key = scope === undefined ? base : `${base}/${encodeURIComponent(boundName(scope))}`;
  if (recentKeys.size >= MAX_RECENT_KEYS) recentKeys.clear();
  recentKeys.set(fingerprint, { server, tool, scope, key });
  return key;
}

/** Fingerprints whose last key is kept: past this many, all are forgotten at once. */
const MAX_RECENT_KEYS = 4096;
const recentKeys = new Map<
  string,
  {
    readonly server: string | undefined;
    readonly tool: string;
    readonly scope: string | undefined;
    readonly key: string;
  }
>();

/**
 * The scope a run learns in (docs/learning.md): the host's `learning.scope` when it gives one;
 * else the tenant prefix of its `idempotencyScope` (the part before the first `:`, as in
 * `` `${tenantId}:${job.id}` ``), so one tenant's failures never demote another tenant's
 * decisions; else none: learned records are shared by every run on the store.
 */
export function learningScopeOf(options: {
  readonly learning?: { readonly scope?: string };
  readonly idempotencyScope?: string;
}): string | undefined {
  const given = options.learning?.scope;
  if (given !== undefined) return given;
  const scope = options.idempotencyScope;
  if (scope === undefined) return undefined;
  const colon = scope.indexOf(":");
  return colon > 0 ? scope.slice(0, colon) : undefined;
}

/**
 * The key prefix of everything learned about a server (`tool` absent) or one of its tools. A tool
 * with no server is under the server `undefined`.
 */
export function learnedPrefix(server: string | undefined, tool?: string): string {
  // Bounded as events bound them: a name a model invents is not kept whole (or with its secret).
  const head = `${encodeURIComponent(boundName(server ?? ""))}/`;
  return tool === undefined ? head : `${head}${encodeURIComponent(boundName(tool))}/`;
}

/** The server, tool, fingerprint and scope of a key made by {@link learnedKey}, or undefined. */
export function parseLearnedKey(
  key: string,
): { server: string | undefined; tool: string; fingerprint: string; scope?: string } | undefined {
  const parts = key.split("/");
  if (parts.length !== 3 && parts.length !== 4) return undefined;
  try {
    const [server, tool, fingerprint, scope] = parts.map(decodeURIComponent) as [
      string,
      string,
      string,
      string | undefined,
    ];
    return {
      server: server === "" ? undefined : server,
      tool,
      fingerprint,
      ...(scope !== undefined && { scope }),
    };
  } catch {
    return undefined;
  }
}

/** What was learned of one server, tool and fingerprint, as a person reads it. */
export interface LearnedEntry {
  readonly server: string | undefined;
  readonly tool: string;
  readonly fingerprint: string;
  /** The scope it was learned in (a tenant); absent when it is shared by every run. */
  readonly scope?: string;
  /** The store key ({@link learnedKey}). */
  readonly key: string;
  /** The counts decayed to now. */
  readonly counts: Record<OutcomeField, number>;
  /** Epoch ms of the last outcome added. */
  readonly updatedAt: number;
  /**
   * What the counts demote now, per decision, under the tool's settings (a write whose outcome
   * is unknown stops where this says `switch_tool`).
   */
  readonly demotes: Partial<Record<LearnedOverride["from"], LearnedOverride["to"]>>;
}

/**
 * A stored record as a {@link LearnedEntry}, decayed to `now`; undefined for a key that
 * {@link learnedKey} did not make. `settingsFor` gives the tool's learning settings and whether
 * the policy names alternatives for it.
 */
export function describeLearned(
  record: OutcomeCounts & { readonly key: string },
  now: number,
  settingsFor: (
    server: string | undefined,
    tool: string,
  ) => { readonly learning: LearningSettings; readonly hasAlternatives: boolean },
): LearnedEntry | undefined {
  const parsed = parseLearnedKey(record.key);
  if (parsed === undefined) return undefined;
  const { learning, hasAlternatives } = settingsFor(parsed.server, parsed.tool);
  const counts = countsAt(record, now, learning.halfLifeMs);
  const demotes: Partial<Record<LearnedOverride["from"], LearnedOverride["to"]>> = {};
  for (const action of ["retry_dependency", "correct_arguments", "switch_tool"] as const) {
    const d = learnedDemotion({
      action,
      counts,
      settings: learning,
      hasAlternatives,
      switchUnsafe: false,
    });
    if (d !== undefined) demotes[action] = d.to;
  }
  return { ...parsed, key: record.key, counts, updatedAt: record.updatedAt, demotes };
}
