import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

// The tests that judge the core in a mutation run (stryker.config.mjs): the core's own, less the
// slow property suites of files outside the mutated set (redaction, its prefilter, canonical JSON,
// the ledger's interleavings). Stryker runs every test for each static mutant (a module-level
// table or pattern), so these alone would multiply the run's time by about four.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ["packages/core/src/**/*.test.ts"],
    projects: undefined,
    // One worker reused across test files: a fresh process per file would cost more than the tests.
    pool: "threads",
    isolate: false,
    exclude: [
      ...(base.test?.exclude ?? ["**/node_modules/**", "**/.git/**"]),
      "packages/core/src/judge/redact.test.ts",
      "packages/core/src/judge/prefilter.test.ts",
      "packages/core/src/judge/canonical.test.ts",
      "packages/core/src/store/ledger.property.test.ts",
    ],
  },
});
