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
