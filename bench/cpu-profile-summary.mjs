/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`, e.g. bench/proxy-cpu.ts with PROFILE=DIR): the
 * functions with the most self time, and the most total time (self plus what they called, each
 * function counted once per stack), as ms and % of the sampled time. With CALLS=N, also µs per
 * call.
 *
 *   node bench/cpu-profile-summary.mjs FILE.cpuprofile [TOP]
 *   FROM=callTool node bench/cpu-profile-summary.mjs FILE.cpuprofile   # from the first call on
 *   FROM_US=T node bench/cpu-profile-summary.mjs FILE.cpuprofile   # from time T (proxy-cold-profile.ts)
 */
import { readFileSync } from "node:fs";

const [file, topText] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write("usage: node bench/cpu-profile-summary.mjs FILE.cpuprofile [TOP]\n");
  process.exit(2);
}
const top = Number(topText ?? 40);
const calls = process.env.CALLS === undefined ? undefined : Number(process.env.CALLS);
const profile = JSON.parse(readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id);

const label = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const where =
    url === ""
      ? ""
      : ` ${url.replace(/^.*node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?/, "").replace(/^file:\/\/.*\/packages\//, "")}:${lineNumber + 1}`;
  return `${functionName || "(anonymous)"}${where}`;
};

// Time per sample: the gap to the next one (the last gets the mean gap).
const { samples, timeDeltas } = profile;
const self = new Map();
const total = new Map();
let sampled = 0;
// FROM=NAME: only the samples from the first whose stack has a function named NAME (e.g.
// `callTool`, to leave out the process's start).
const from = process.env.FROM;
const hasFrame = (id) => {
  for (let at = id; at !== undefined; at = parent.get(at))
    if (nodes.get(at).callFrame.functionName === from) return true;
  return false;
};
let first = 0;
if (from !== undefined) while (first < samples.length && !hasFrame(samples[first])) first++;
// FROM_US=T: only the samples taken at T or later (µs on the profile's clock, the monotonic one:
// `process.hrtime.bigint() / 1000n` in a process of the same machine).
const fromUs = process.env.FROM_US === undefined ? undefined : Number(process.env.FROM_US);
if (fromUs !== undefined) {
  let at = profile.startTime;
  for (first = 0; first < samples.length; first++) {
    at += timeDeltas[first] ?? 0;
    if (at >= fromUs) break;
  }
}
for (let i = first; i < samples.length; i++) {
  const dt = (timeDeltas[i + 1] ?? (profile.endTime - profile.startTime) / samples.length) / 1000;
  sampled += dt;
  const leaf = nodes.get(samples[i]);
  const name = label(leaf);
  self.set(name, (self.get(name) ?? 0) + dt);
  const seen = new Set();
  for (let id = samples[i]; id !== undefined; id = parent.get(id)) {
    const key = label(nodes.get(id));
    if (seen.has(key)) continue;
    seen.add(key);
    total.set(key, (total.get(key) ?? 0) + dt);
  }
}

const print = (title, table) => {
  process.stdout.write(`\n${title} (of ${sampled.toFixed(0)} ms sampled)\n`);
  const rows = [...table].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, ms] of rows) {
    const perCall =
      calls === undefined ? "" : `${((ms * 1000) / calls).toFixed(1).padStart(7)} us/call`;
    process.stdout.write(
      `${ms.toFixed(1).padStart(9)} ms ${((100 * ms) / sampled).toFixed(1).padStart(5)}% ${perCall}  ${name}\n`,
    );
  }
};
print("self time", self);
print("total time", total);
