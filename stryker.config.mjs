// Mutation testing of the core's decision files (issue 8): `pnpm mutate`, not part of `pnpm test`.
// Stryker 10 needs Node 22+; scripts/mutate.sh runs it under one (see there). One file while
// iterating: `pnpm mutate --mutate packages/core/src/judge/effect.ts`.

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner"],
  // Only the core's own tests judge the core; `related` runs the tests that import a file.
  vitest: { configFile: "vitest.mutate.config.ts", related: true, pool: "threads" },
  coverageAnalysis: "perTest",
  mutate: [
    "packages/core/src/judge/decide.ts",
    "packages/core/src/run/budget.ts",
    "packages/core/src/run/breaker.ts",
    "packages/core/src/judge/backoff.ts",
    "packages/core/src/judge/effect.ts",
    "packages/core/src/judge/classify.ts",
    "packages/core/src/judge/message.ts",
    "packages/core/src/reasons.ts",
    "packages/core/src/judge/fingerprint.ts",
  ],
  // The pnpm workspace links packages with relative symlinks a sandbox copy would break, so the
  // files are mutated in place (Stryker restores them at the end; do not edit them during a run).
  inPlace: true,
  // Vitest does not type-check, and the preprocessor would rewrite (and un-chmod) unrelated files.
  disableTypeChecks: false,
  // CPU is scarce: one test process.
  concurrency: 1,
  timeoutMS: 10_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  // The targets of issue 8: 90% for the decision files, 75% for message and fingerprint.
  thresholds: { high: 90, low: 75, break: null },
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
