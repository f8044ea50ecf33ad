import { GovernorStopError } from "@governor/core";
import { expect, it } from "vitest";
import * as api from "./index.ts";

it("exports exactly the public API", () => {
  expect(Object.keys(api).sort()).toEqual([
    "GovernorStopError",
    "governMcpServer",
    "governedTool",
    "governorStopOf",
  ]);
});

it("GovernorStopError is @governor/core's class, the one every adapter throws", () => {
  expect(api.GovernorStopError).toBe(GovernorStopError);
});
