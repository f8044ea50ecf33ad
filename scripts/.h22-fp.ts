import { readFileSync } from "node:fs";
import { failureFromResult } from "@governor/core";
import { fingerprint, normalizeForFingerprint } from "@governor/core/judge";
const pairs = readFileSync("test/corpus/fingerprint-pairs.jsonl", "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const print = (tool: string, text: string) => { const f = failureFromResult({ content: [{ type: "text", text }], isError: true }); return fingerprint({ tool, channel: f.channel, text: f.text, ...(f.code !== undefined && { code: f.code }) }); };
for (const p of pairs) {
  if (!String(p.id).startsWith("hard-") || !p.same) continue;
  if (print(p.tool, p.a) === print(p.tool, p.b)) continue;
  console.log(`${p.id} ${p.kind}\n  A: ${p.a.replace(/\n/g, "⏎").slice(0, 200)}\n  B: ${p.b.replace(/\n/g, "⏎").slice(0, 200)}`);
}
