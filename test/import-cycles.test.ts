// The packages' source has no import cycle, type-only imports included: a reader can walk each
// module's dependencies down to the leaves (issue 13).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../packages");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "dist" ? [] : sources(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [path] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g;

function graph(files: readonly string[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    edges.set(
      file,
      [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1] as string)),
    );
  }
  return edges;
}

/** Every cycle found by a depth-first walk, each as the list of files it passes through. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === "open") found.push(stack.slice(stack.indexOf(next)));
      else if (!state.has(next) && edges.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of edges.keys()) if (!state.has(node)) visit(node);
  return found.map((c) => c.map((f) => f.slice(root.length + 1)));
}

describe("import graph", () => {
  it("finds a cycle when there is one (the check can fail)", () => {
    const a = "/x/a.ts";
    const b = "/x/b.ts";
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ).length,
    ).toBe(1);
  });

  it("packages/*/src has no import cycle", () => {
    expect(cycles(graph(sources(root)))).toEqual([]);
  });
});
