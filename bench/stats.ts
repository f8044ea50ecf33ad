/** One figure of bench/results.json (docs/architecture.md §9). */
export interface Figure {
  readonly value: number;
  readonly baseline: number | null;
  /** ours / baseline, where a baseline exists. */
  readonly ratio: number | null;
  readonly unit: string;
  readonly samples: number;
}

/** Builds a figure, rounding for readability. */
export function figure(
  value: number,
  baseline: number | null,
  unit: string,
  samples: number,
): Figure {
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    value: round(value),
    baseline: baseline === null ? null : round(baseline),
    ratio: baseline === null || baseline === 0 ? null : round(value / baseline),
    unit,
    samples,
  };
}

/** The median of a list of numbers. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** A percentile (0..100) of a list of numbers, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}
