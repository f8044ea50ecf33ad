// The public API of @governor/mcp: an explicit list, pinned by index.test.ts.
export {
  type GovernClientOptions,
  type GovernedCallParams,
  type GovernedClient,
  governClient,
  toModelResult,
} from "./client.ts";
export { deliverableResult, MAX_RESULT_DEPTH } from "./deliverable.ts";
export { type CallSiteFacts, mapSdkError } from "./map-error.ts";
export { PlainAbortSignal } from "./plain-signal.ts";
export { captureRetryAfter, type RetryAfterFetch, type RetryAfterSlot } from "./retry-after.ts";
export type { McpClient } from "./sdk.ts";
