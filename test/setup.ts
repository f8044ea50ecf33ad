import fc from "fast-check";

// Property tests explore new random cases on every local run. In CI they replay one fixed seed
// (override with FC_SEED), so a submission's result does not depend on the draw; a failure
// prints its seed and counterexample either way.
if (process.env.CI) fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20_261_202) });
