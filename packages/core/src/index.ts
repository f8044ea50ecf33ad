// The public API of @governor/core: an explicit list, pinned by index.test.ts.

export { type Assessment, type AssessOptions, assessFailure } from "./assess.ts";
export { canonicalJson, hashArgs } from "./canonical.ts";
export { type Classification, classify } from "./classify.ts";
export {
  type BudgetName,
  type DecideContext,
  type Decision,
  decide,
  safeToRepeat,
} from "./decide.ts";
export { effectFromAnnotations, resolveEffect, type ToolAnnotations } from "./effect.ts";
export { GovernorError, type GovernorErrorCode, HostError } from "./errors.ts";
// telemetry (added by telemetry helper)
export {
  createJsonlSink,
  type JsonlSink,
  type JsonlSinkOptions,
  type JsonlSinkTarget,
  type ParsedEvents,
  parseEvents,
} from "./event-log.ts";
export {
  type FingerprintReport,
  type Report,
  type SummarizeLinesOptions,
  type SummarizeOptions,
  summarizeEventLines,
  summarizeEvents,
} from "./event-report.ts";
export { eventSchema } from "./event-schema.ts";
export {
  type CallEvent,
  type CallOutcomeKind,
  type DecisionEvent,
  EVENT_SCHEMA_VERSION,
  type GovernorEvent,
  type RunEndEvent,
  type RunEndReason,
  type RunSummary,
} from "./events.ts";
export {
  type Failure,
  type FromErrorOptions,
  failureFromError,
  failureFromResult,
  type LocalKind,
  localFailure,
  type NamedLocal,
  parseRetryAfter,
  stripMcpPrefix,
  TOOL_FAILURE_META_KEY,
  type ToolFailureMeta,
  type ToolResultLike,
} from "./failure.ts";
export { type FingerprintInput, fingerprint, normalizeText } from "./fingerprint.ts";
export {
  type ConfirmContext,
  createGovernor,
  type Governor,
  type GovernorOptions,
  type HostContext,
  type HostResolution,
  type RetryContext,
  type VerifyContext,
  type VerifyResult,
} from "./governor.ts";
export { createMemoryStore, type MemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
export { composeMessage, type MessageInput } from "./message.ts";
export {
  type Budgets,
  loadPolicy,
  type Policy,
  type PolicyInput,
  type PolicyRule,
  policyJsonSchema,
  policySchema,
  resolveToolPolicy,
  type ToolPolicy,
  type ToolSettings,
} from "./policy.ts";
export { type RedactOptions, redact } from "./redact.ts";
export { BUILTIN_RULES, classifyHttpStatus, matchBuiltinRules, type TextRule } from "./rules.ts";
export {
  type AttemptContext,
  type CallOutcome,
  type Executor,
  IDEMPOTENCY_META_KEY,
  type ModelResult,
  type Run,
  type RunOptions,
  type ToolCall,
} from "./run.ts";
export {
  type ClaimOptions,
  type ClaimResult,
  type LedgerEntry,
  type LedgerState,
  type SettleOptions,
  type Store,
  StoreError,
  type StoreErrorReason,
} from "./store.ts";
export {
  type CounterLike,
  createOtelRecorder,
  type EventRecorder,
  type HistogramLike,
  type InstrumentOptionsLike,
  type MeterLike,
  type MetricAttributesLike,
  type OtelRecorderOptions,
} from "./telemetry.ts";
export {
  ACTIONS,
  type Action,
  type Certainty,
  type Channel,
  type Effect,
  type MaybePromise,
  type Origin,
  PERSON_RESOLVABLE,
  REASONS,
  type Reason,
} from "./types.ts";
