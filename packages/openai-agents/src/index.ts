// The public API of @governor/openai-agents: an explicit list, pinned by index.test.ts.
export { type GovernedToolOptions, governedTool } from "./governed-tool.ts";
export { type GovernMcpServerOptions, governMcpServer } from "./mcp-server.ts";
export { governedFetch } from "./send-gate.ts";
export { GovernorStopError, governorStopOf, hostErrorOf } from "./stop-error.ts";
