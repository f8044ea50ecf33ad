import { readFileSync } from "node:fs";

const load = async (src: string) =>
  (await import(
    `${src}/judge/fingerprint.ts`
  )) as typeof import("../packages/core/src/judge/fingerprint.ts");
const A = await load("/tmp/head/packages/core/src");
const B = await load(new URL("../packages/core/src", import.meta.url).pathname);
const file = process.argv[2] ?? "tool-errors.jsonl";
const texts = readFileSync(`test/corpus/${file}`, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((l) => JSON.parse(l).text as string);
const round = (f: (t: string) => string) => {
  const t0 = performance.now();
  let n = 0;
  for (const t of texts) n += f(t).length;
  return ((performance.now() - t0) * 1000) / texts.length + n * 0;
};
const fa = (t: string) => A.fingerprint({ tool: "t", channel: "tool", text: t });
const fb = (t: string) => B.fingerprint({ tool: "t", channel: "tool", text: t });
for (let w = 0; w < 20; w++) {
  round(A.normalizeText);
  round(B.normalizeText);
  round(fa);
  round(fb);
}
const ra: number[] = [],
  rb: number[] = [],
  fa1: number[] = [],
  fb1: number[] = [];
for (let r = 0; r < 200; r++) {
  ra.push(round(A.normalizeText));
  rb.push(round(B.normalizeText));
  fa1.push(round(fa));
  fb1.push(round(fb));
}
const med = (x: number[]) => x.sort((p, q) => p - q)[x.length >> 1] as number;
const min = (x: number[]) => Math.min(...x);
console.log(
  `${file}: normalizeText before ${med(ra).toFixed(2)} µs (min ${min(ra).toFixed(2)}), after ${med(rb).toFixed(2)} µs (min ${min(rb).toFixed(2)}); ratio ${(med(rb) / med(ra)).toFixed(2)}`,
);
console.log(
  `${file}: fingerprint   before ${med(fa1).toFixed(2)} µs (min ${min(fa1).toFixed(2)}), after ${med(fb1).toFixed(2)} µs (min ${min(fb1).toFixed(2)}); ratio ${(med(fb1) / med(fa1)).toFixed(2)}`,
);
