export {
  type AgentRuntime,
  type AgentTask,
  DEFAULT_MAX_TURNS,
  editDistance,
  type Observation,
  type ReactContext,
  type Reaction,
  type ReactionRule,
  type RunTaskOptions,
  react,
  runTask,
  type TaskOutcome,
  type TaskRecord,
  type TaskSession,
  type ToolRequest,
  type Turn,
  type TurnResult,
} from "./agent.ts";
export { connectFaultServer, type FaultConnection, type WireCounts } from "./agent-connection.ts";
export {
  type BlindRetryOptions,
  blindRetryRuntime,
  leaksSecrets,
  naiveRuntime,
  type PlainRuntimeOptions,
  resultText,
  thrownText,
} from "./agent-runtimes.ts";
export { DEMO_SCENARIO, DEMO_TASKS } from "./agent-tasks.ts";
export {
  connectHttp,
  connectInMemory,
  connectStdio,
  processExists,
  waitForExit,
} from "./clients.ts";
export {
  canonicalJson,
  countDuplicateWrites,
  type Effect,
  effectIdentity,
  readEffects,
  stateFileFor,
} from "./effects.ts";
export {
  createFaultServer,
  DAILY_TRANSFER_LIMIT,
  FAULT_TOOL_NAMES,
  type FaultContext,
  type FaultServerOptions,
  type FaultToolName,
  IDEMPOTENCY_META_KEY,
  SEED_NOTE_IDS,
  statusResult,
  TOOL_FAILURE_META_KEY,
} from "./fault-server.ts";
export {
  type HttpFault,
  type HttpFaultServer,
  type HttpFaultServerOptions,
  type HttpRequestRecord,
  startHttpServer,
} from "./http.ts";
export {
  createLowLevelServer,
  LOWLEVEL_TOOL_NAMES,
  type LowLevelServerOptions,
} from "./lowlevel-server.ts";
export {
  type Commit,
  DEFAULT_SCENARIO,
  FaultState,
  type FaultStateOptions,
  type FaultStep,
  FaultStepSchema,
  parseScenario,
  type Scenario,
  ScenarioSchema,
} from "./scenario.ts";
export {
  crashMessage,
  DEFAULT_SECRET,
  FAKE_BEARER_TOKEN,
  FAKE_CONNECTION_STRING,
  FAKE_GITHUB_TOKEN,
  FAKE_SOURCE_PATH,
  fixtureSecrets,
} from "./secrets.ts";
export {
  STDIO_MAIN_PATH,
  type StdioFaultServerOptions,
  stdioServerParams,
  TSX_LOADER_URL,
} from "./stdio.ts";
export { MALFORMED_RESULT } from "./wire.ts";
