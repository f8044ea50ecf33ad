// The public API of @governor/ai-sdk: an explicit list, pinned by index.test.ts.
export { type GovernedStop, type GovernToolsOptions, governTools } from "./govern-tools.ts";
export { type GovernorRepairOptions, governorRepairToolCall } from "./repair.ts";
export { governorStopCondition } from "./stop-condition.ts";
