// The public API of @governor/langchain/agent (langchain's createAgent): pinned by index.test.ts.
export { governorMiddleware } from "./agent.ts";
