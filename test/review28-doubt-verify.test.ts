// Review 28: a keyed write whose first attempt may have written (connection closed after it went
// out), refused on its retry with a text the model could act on (`already exists`). 916354c made
// that refusal stop `uncertain_mutation` "unless a verify step found it absent", but the verify
// step was never asked there: failed-attempt.ts asked it only for a classification that was a
// stop or a retry ending in `uncertain_mutation` (`uncertainMutation`), never for a correction or
// a switch that `afterDoubt` turns into that stop. A policy with `idempotency.verify: true` and a
// verify step that can tell got a stop a person had to settle by hand (and, for a write found
// absent, a correction the model could have made was refused).
import { createGovernor, localFailure } from "@governor/core";
import { describe, expect, it } from "vitest";

const failed = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

function governor(effect: "present" | "absent", asked: { n: number }) {
  return createGovernor(
    {
      defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } },
      tools: {
        create_note: { effect: "mutating", idempotency: { honorsKeys: true, verify: true } },
      },
    },
    {
      metrics: false,
      verify: {
        create_note: async () => {
          asked.n += 1;
          return effect === "present" ? { effect, result: { id: "note-1" } } : { effect };
        },
      },
    },
  );
}

async function firstInDoubtThenRefused(effect: "present" | "absent", text: string) {
  const asked = { n: 0 };
  let sent = 0;
  const outcome = await governor(effect, asked)
    .startRun()
    .call(
      {
        tool: "create_note",
        args: { title: "t" },
        toFailure: () => localFailure("connection_closed"),
      },
      async () => {
        sent += 1;
        if (sent === 1) throw new Error("connection closed after the request went out");
        return failed(text);
      },
    );
  return { outcome, asked: asked.n, sent };
}

describe("a write in doubt refused on its keyed retry, with a verify step", () => {
  it("the verify step is asked; present: the write's result, not a stop", async () => {
    const { outcome, asked, sent } = await firstInDoubtThenRefused(
      "present",
      "Error: a note with this title already exists",
    );
    expect(sent).toBe(2);
    expect(asked).toBe(1);
    expect(outcome).toMatchObject({ kind: "ok", replayed: true, value: { id: "note-1" } });
  });

  it("absent: nothing was written, so the refusal goes to the model as a correction", async () => {
    const { outcome, asked } = await firstInDoubtThenRefused(
      "absent",
      "Validation failed: title is too long",
    );
    expect(asked).toBe(1);
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
  });
});
