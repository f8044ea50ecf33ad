import type { Effect } from "../types.ts";

/** MCP tool annotations that bear on effects (all hints). */
export interface ToolAnnotations {
  readonly readOnlyHint?: boolean | undefined;
  readonly destructiveHint?: boolean | undefined;
  readonly idempotentHint?: boolean | undefined;
}

/**
 * A tool's effect from MCP annotations, with the spec's defaults when a hint is absent
 * (`readOnlyHint` false, `destructiveHint` true, `idempotentHint` false): unannotated is mutating.
 * Use only for servers the policy trusts.
 */
export function effectFromAnnotations(annotations: ToolAnnotations | undefined): Effect {
  if (annotations?.readOnlyHint === true) return "read_only";
  if (annotations?.idempotentHint === true) return "idempotent";
  return "mutating";
}

/**
 * The effect that governs a call: the policy's first; else trusted annotations; else `mutating`.
 */
export function resolveEffect(
  policyEffect: Effect | undefined,
  trustAnnotations: boolean,
  annotations: ToolAnnotations | undefined,
): Effect {
  if (policyEffect !== undefined) return policyEffect;
  if (trustAnnotations && annotations !== undefined) return effectFromAnnotations(annotations);
  return "mutating";
}
