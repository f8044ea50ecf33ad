/**
 * Training of the learned last stage (packages/core/src/judge/text-model.ts): a multinomial
 * logistic regression over the features `textFeatures` reads, fitted by full-batch gradient
 * descent with an L2 penalty. Deterministic: no random start, no shuffling, the same corpus gives
 * the same weights. Used by `scripts/train-text-model.ts` (the shipped file) and by
 * `scripts/eval-corpus.ts` (one model per fold, trained without the fold's servers).
 */
import {
  MODEL_CLASSES,
  type ModelClass,
  type TextModel,
  textFeatures,
} from "../packages/core/src/judge/text-model.ts";

/** One labelled text. */
export interface TrainingText {
  readonly server: string;
  readonly text: string;
  readonly label: ModelClass;
}

/** Knobs of {@link trainTextModel}; the defaults made the shipped file. */
export interface TrainingOptions {
  /** A feature is kept only when texts of this many servers hold it: no one server's sentence. */
  readonly minServers?: number;
  /** Features kept after training, the most weighted first (the file's size). */
  readonly keep?: number;
  readonly l2?: number;
  readonly iterations?: number;
  readonly learningRate?: number;
  readonly trainedOn?: string;
}

const K = MODEL_CLASSES.length;

function fitWeights(
  rows: readonly { readonly x: readonly number[]; readonly y: number; readonly weight: number }[],
  features: number,
  o: Required<TrainingOptions>,
): { bias: number[]; w: Float64Array } {
  const w = new Float64Array(features * K);
  const bias = new Array<number>(K).fill(0);
  const total = rows.reduce((s, r) => s + r.weight, 0);
  // Adagrad on full batches: a steady, deterministic descent without a schedule to tune.
  const gw = new Float64Array(features * K);
  const hw = new Float64Array(features * K);
  const hb = new Array<number>(K).fill(0);
  for (let it = 0; it < o.iterations; it++) {
    gw.fill(0);
    const gb = new Array<number>(K).fill(0);
    for (const r of rows) {
      const s = [...bias];
      for (const f of r.x)
        for (let k = 0; k < K; k++) s[k] = (s[k] as number) + (w[f * K + k] as number);
      const top = Math.max(...s);
      const e = s.map((v) => Math.exp(v - top));
      const z = e.reduce((a, b) => a + b, 0);
      for (let k = 0; k < K; k++) {
        const d = (r.weight * ((e[k] as number) / z - (k === r.y ? 1 : 0))) / total;
        gb[k] = (gb[k] as number) + d;
        for (const f of r.x) gw[f * K + k] = (gw[f * K + k] as number) + d;
      }
    }
    for (let i = 0; i < w.length; i++) {
      const g = (gw[i] as number) + o.l2 * (w[i] as number);
      hw[i] = (hw[i] as number) + g * g;
      w[i] = (w[i] as number) - (o.learningRate * g) / (Math.sqrt(hw[i] as number) + 1e-8);
    }
    for (let k = 0; k < K; k++) {
      const g = gb[k] as number;
      hb[k] = (hb[k] as number) + g * g;
      bias[k] = (bias[k] as number) - (o.learningRate * g) / (Math.sqrt(hb[k] as number) + 1e-8);
    }
  }
  return { bias, w };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** Trains a model on labelled texts; each server weighs the same in total (a big server does not drown the rest). */
export function trainTextModel(
  texts: readonly TrainingText[],
  options: TrainingOptions = {},
): TextModel {
  return trainOnFeatures(
    texts.map((t) => ({ server: t.server, features: textFeatures(t.text), label: t.label })),
    options,
  );
}

/** One labelled row of features (the text model's, or another reader's: scripts/eval-stack.ts). */
export interface FeatureRow {
  readonly server: string;
  readonly features: readonly string[];
  readonly label: ModelClass;
}

/**
 * Trains a model on rows of features, as {@link trainTextModel} trains on a text's: features of
 * at least `minServers` servers, each server weighing the same in total, the `keep` strongest kept.
 */
export function trainOnFeatures(
  texts: readonly FeatureRow[],
  options: TrainingOptions = {},
): TextModel {
  const o: Required<TrainingOptions> = {
    minServers: 2,
    keep: 500,
    l2: 0.005,
    iterations: 300,
    learningRate: 0.5,
    trainedOn: "",
    ...options,
  };
  const featuresOf = texts.map((t) => t.features);
  const servers = new Map<string, Set<string>>();
  featuresOf.forEach((fs, i) => {
    for (const f of fs) {
      const set = servers.get(f) ?? new Set<string>();
      set.add((texts[i] as FeatureRow).server);
      servers.set(f, set);
    }
  });
  const perServer = new Map<string, number>();
  for (const t of texts) perServer.set(t.server, (perServer.get(t.server) ?? 0) + 1);
  const train = (vocabulary: readonly string[]) => {
    const index = new Map(vocabulary.map((f, i) => [f, i]));
    const rows = texts.map((t, i) => ({
      x: (featuresOf[i] as readonly string[]).flatMap((f) =>
        index.has(f) ? [index.get(f) as number] : [],
      ),
      y: MODEL_CLASSES.indexOf(t.label),
      weight: 1 / Math.sqrt(perServer.get(t.server) as number),
    }));
    return fitWeights(rows, vocabulary.length, o);
  };
  const vocabulary = [...servers]
    .filter(([, s]) => s.size >= o.minServers)
    .map(([f]) => f)
    .sort();
  const first = train(vocabulary);
  const strength = vocabulary.map((f, i) => {
    let m = 0;
    for (let k = 0; k < K; k++) m = Math.max(m, Math.abs(first.w[i * K + k] as number));
    return { f, m };
  });
  const kept = strength
    .sort((a, b) => b.m - a.m || (a.f < b.f ? -1 : 1))
    .slice(0, o.keep)
    .map((s) => s.f)
    .sort();
  const final = train(kept);
  const weights: Record<string, number[]> = {};
  kept.forEach((f, i) => {
    weights[f] = Array.from({ length: K }, (_, k) => round(final.w[i * K + k] as number));
  });
  return { v: 1, trainedOn: o.trainedOn, bias: final.bias.map(round), weights };
}
