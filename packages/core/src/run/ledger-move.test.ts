import { describe, expect, it } from "vitest";
import { type LedgerEvent, ledgerMove } from "./ledger.ts";

const clear = { uncertain: false, retaken: false };
const events: LedgerEvent[] = [
  "answered",
  "verified_present",
  "verified_absent",
  "refused",
  "unknown",
  "not_sent",
];

describe("ledgerMove", () => {
  it("moves a claimed key by what the flow learned of its write", () => {
    expect(events.map((e) => [e, ledgerMove(clear, e)])).toEqual([
      ["answered", "succeeded"],
      ["verified_present", "succeeded"],
      ["verified_absent", "failed"],
      ["refused", "failed"],
      ["unknown", "uncertain"],
      ["not_sent", "failed"],
    ]);
  });

  it("keeps a key in doubt when an attempt that sent nothing follows one that may have written", () => {
    expect(ledgerMove({ uncertain: true, retaken: false }, "not_sent")).toBe("uncertain");
    // The claim took over another attempt's write in doubt: that write may have happened.
    expect(ledgerMove({ uncertain: false, retaken: true }, "not_sent")).toBe("uncertain");
  });

  it("moves a key out of doubt only on an answer about the write itself", () => {
    const doubt = { uncertain: true, retaken: true };
    expect(ledgerMove(doubt, "answered")).toBe("succeeded");
    expect(ledgerMove(doubt, "verified_present")).toBe("succeeded");
    expect(ledgerMove(doubt, "verified_absent")).toBe("failed");
    expect(ledgerMove(doubt, "unknown")).toBe("uncertain");
    expect(ledgerMove(doubt, "refused")).toBe("uncertain");
  });
});
