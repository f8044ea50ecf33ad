// The public API of @governor/langchain: an explicit list, pinned by index.test.ts.

export { governTool, governTools } from "./govern-tools.ts";
export { GovernedTool, type GovernOptions } from "./governed-tool.ts";
export {
  type GovernedMcpClient,
  type GovernMcpToolsOptions,
  governMcpTools,
  type McpToolListing,
  type McpToolResult,
} from "./mcp-tools.ts";
export { GovernorStopError, throwIfStopped } from "./stop.ts";
export { countUnknownToolCalls } from "./unknown-tools.ts";
