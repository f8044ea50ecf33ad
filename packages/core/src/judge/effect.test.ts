import { describe, expect, it } from "vitest";
import { effectFromAnnotations, resolveEffect } from "./effect.ts";

// A tool's effect decides whether an uncertain failure may be repeated: anything read wrongly as
// `read_only` or `idempotent` could run a write twice (docs/architecture.md §2, §4).
describe("effectFromAnnotations", () => {
  it("reads readOnlyHint: true as read_only, whatever the other hints say", () => {
    expect(effectFromAnnotations({ readOnlyHint: true })).toBe("read_only");
    expect(effectFromAnnotations({ readOnlyHint: true, idempotentHint: false })).toBe("read_only");
    expect(effectFromAnnotations({ readOnlyHint: true, destructiveHint: true })).toBe("read_only");
  });

  it("reads idempotentHint: true on a tool that is not read-only as idempotent", () => {
    expect(effectFromAnnotations({ idempotentHint: true })).toBe("idempotent");
    expect(effectFromAnnotations({ readOnlyHint: false, idempotentHint: true })).toBe("idempotent");
  });

  it("applies the spec's defaults: absent or false hints make a tool mutating", () => {
    expect(effectFromAnnotations(undefined)).toBe("mutating");
    expect(effectFromAnnotations({})).toBe("mutating");
    expect(effectFromAnnotations({ readOnlyHint: false })).toBe("mutating");
    expect(effectFromAnnotations({ idempotentHint: false })).toBe("mutating");
    expect(effectFromAnnotations({ readOnlyHint: false, idempotentHint: false })).toBe("mutating");
    // Not destructive is still a write: only read-only or idempotent make a repeat safe.
    expect(effectFromAnnotations({ destructiveHint: false })).toBe("mutating");
    expect(effectFromAnnotations({ readOnlyHint: undefined, idempotentHint: undefined })).toBe(
      "mutating",
    );
  });
});

describe("resolveEffect", () => {
  it("takes the policy's effect first, over any annotation, trusted or not", () => {
    expect(resolveEffect("mutating", true, { readOnlyHint: true })).toBe("mutating");
    expect(resolveEffect("idempotent", true, { readOnlyHint: true })).toBe("idempotent");
    expect(resolveEffect("read_only", true, {})).toBe("read_only");
    expect(resolveEffect("read_only", false, undefined)).toBe("read_only");
  });

  it("uses annotations only from a trusted server", () => {
    expect(resolveEffect(undefined, true, { readOnlyHint: true })).toBe("read_only");
    expect(resolveEffect(undefined, true, { idempotentHint: true })).toBe("idempotent");
    expect(resolveEffect(undefined, true, {})).toBe("mutating");
    // An untrusted server's hints never make a tool safer to repeat.
    expect(resolveEffect(undefined, false, { readOnlyHint: true })).toBe("mutating");
    expect(resolveEffect(undefined, false, { idempotentHint: true })).toBe("mutating");
  });

  it("is mutating when nobody describes the tool", () => {
    expect(resolveEffect(undefined, true, undefined)).toBe("mutating");
    expect(resolveEffect(undefined, false, undefined)).toBe("mutating");
  });
});
