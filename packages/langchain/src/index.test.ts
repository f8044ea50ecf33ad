import { GovernorStopError } from "@governor/core";
import { expect, it } from "vitest";
import * as agent from "./agent-index.ts";
import * as api from "./index.ts";

it("exports exactly the public API", () => {
  expect(Object.keys(api).sort()).toEqual([
    "GovernedTool",
    "GovernorStopError",
    "countUnknownToolCalls",
    "governMcpTools",
    "governTool",
    "governTools",
    "throwIfStopped",
  ]);
  expect(Object.keys(agent).sort()).toEqual(["governorMiddleware"]);
});

it("GovernorStopError is @governor/core's class, the one every adapter throws", () => {
  expect(api.GovernorStopError).toBe(GovernorStopError);
});
