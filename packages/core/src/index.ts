// The public API of @governor/core for agent loops and adapters: an explicit list, pinned by
// index.test.ts. The judging building blocks (classify, fingerprint, redact, rules, assess) live
// under the subpath "@governor/core/judge".

export { GovernorError, type GovernorErrorCode, HostError } from "./errors.ts";
export type { BudgetName, Decision } from "./judge/decide.ts";
export type { ToolAnnotations } from "./judge/effect.ts";
export {
  type Failure,
  type FromErrorOptions,
  failureFromError,
  failureFromResult,
  type LocalKind,
  localFailure,
  type NamedLocal,
  TOOL_FAILURE_META_KEY,
  type ToolFailureMeta,
  type ToolResultLike,
} from "./judge/failure.ts";
export type { LearnedEntry, LearnedOverride, OutcomeField } from "./judge/learned.ts";
export {
  type Budgets,
  loadPolicy,
  type Policy,
  type PolicyInput,
  type PolicyRule,
  policyJsonSchema,
  type ToolPolicy,
  type ToolSettings,
} from "./policy/policy.ts";
export {
  createReconnector,
  ReconnectFailed,
  type Reconnector,
  type ReconnectorOptions,
} from "./reconnect.ts";
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
} from "./run/governor.ts";
export { withoutKeyArgument } from "./run/key-argument.ts";
export {
  type AttemptContext,
  type CallOutcome,
  type Executor,
  IDEMPOTENCY_META_KEY,
  type ModelResult,
  type Run,
  type RunOptions,
  type ToolCall,
} from "./run/run.ts";
export { GovernorStopError, type StopDetails } from "./run/stop-error.ts";
export {
  createMemoryStore,
  type MemoryStore,
  type MemoryStoreOptions,
} from "./store/memory-store.ts";
export {
  type AddOutcomeOptions,
  type ClaimOptions,
  type ClaimResult,
  checkAddOutcome,
  isHeld,
  type LedgerEntry,
  type LedgerState,
  type OutcomeRecord,
  type SettleOptions,
  type Store,
  StoreError,
  type StoreErrorReason,
  type SynchronousStore,
  settleHoldMs,
} from "./store/store.ts";
export {
  createJsonlSink,
  type JsonlSink,
  type JsonlSinkOptions,
  type JsonlSinkTarget,
  type ParsedEvents,
  parseEvents,
} from "./telemetry/event-log.ts";
export {
  type FingerprintReport,
  type Report,
  type SummarizeLinesOptions,
  type SummarizeOptions,
  summarizeEventLines,
  summarizeEvents,
} from "./telemetry/event-report.ts";
export {
  type CallEvent,
  type CallOutcomeKind,
  type DecisionEvent,
  type DecisionInput,
  EVENT_SCHEMA_VERSION,
  type GovernorEvent,
  type RecordedFailure,
  type RunEndEvent,
  type RunEndReason,
  type RunSummary,
} from "./telemetry/events.ts";
export {
  createOtelRecorder,
  type EventRecorder,
  type OtelRecorderOptions,
} from "./telemetry/telemetry.ts";
export type { TracerLike, TracingOptions } from "./telemetry/tracing.ts";
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
