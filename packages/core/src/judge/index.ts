// "@governor/core/judge": the building blocks that judge one failure, for tools such as the CLI
// and for people who build on them. An agent loop needs only the root entry. Pinned by
// index.test.ts.

export { policySchema, resolveToolPolicy } from "../policy/policy.ts";
export { parseEventLine } from "../telemetry/event-log.ts";
export { eventSchema } from "../telemetry/event-schema.ts";
export { type Assessment, type AssessOptions, assessFailure } from "./assess.ts";
export { type CallEvidence, type CallFacts, readCallEvidence } from "./call-evidence.ts";
export { canonicalJson, hashArgs } from "./canonical.ts";
export { type Classification, classify } from "./classify.ts";
export {
  type BudgetName,
  type DecideContext,
  type Decision,
  decide,
  safeToRepeat,
  stopsGuessedWrite,
} from "./decide.ts";
export { isDeliverable, MAX_RESULT_DEPTH, undeliverableText } from "./deliverable.ts";
export { effectFromAnnotations, resolveEffect, type ToolAnnotations } from "./effect.ts";
export { type Explanation, explainClassification } from "./explain.ts";
export { parseRetryAfter, stripMcpPrefix } from "./failure.ts";
export { type FingerprintInput, fingerprint, normalizeText } from "./fingerprint.ts";
export {
  addToCounts,
  countsAt,
  type DemotionInput,
  describeLearned,
  LEARNING_DEFAULTS,
  type LearnedDecision,
  type LearnedEntry,
  type LearnedOverride,
  type LearningSettings,
  learnedDemotion,
  learnedKey,
  learnedPrefix,
  OUTCOME_FIELDS,
  type OutcomeCounts,
  type OutcomeField,
  parseLearnedKey,
} from "./learned.ts";
export { composeMessage, hostErrorText, type MessageInput, replayedText } from "./message.ts";
export { type RedactOptions, redact } from "./redact.ts";
export { BUILTIN_RULES, classifyHttpStatus, matchBuiltinRules, type TextRule } from "./rules.ts";
export type { ModelClass, TextModel } from "./text-model.ts";
