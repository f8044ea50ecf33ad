// Inline SVG charts for the HTML report: no script, no library, no network. Every text goes
// through `esc`: tool names and fingerprints come from logs, and a log is not trusted.

/** Escapes text for HTML and SVG (element content and quoted attributes). */
export function esc(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/** A fixed palette; series take colours in order. */
export const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
] as const;

const colour = (i: number): string => PALETTE[i % PALETTE.length] as string;

const num = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1));

/** One bar: its value is in `data-value`, for people reading the source and for tests. */
function bar(
  x: number,
  y: number,
  w: number,
  h: number,
  fill: string,
  value: number,
  title: string,
) {
  return `<rect class="bar" data-value="${num(value)}" x="${num(x)}" y="${num(y)}" width="${num(Math.max(w, 0))}" height="${num(Math.max(h, 0))}" fill="${fill}"><title>${esc(title)}</title></rect>`;
}

const svg = (width: number, height: number, body: string, label: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${esc(label)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${body}</svg>`;

function legend(series: readonly string[], y: number): string {
  let x = 0;
  return series
    .map((name, i) => {
      const item = `<rect x="${x}" y="${y}" width="10" height="10" fill="${colour(i)}"/><text x="${x + 14}" y="${y + 9}" class="legend">${esc(name)}</text>`;
      x += 24 + name.length * 6.5;
      return item;
    })
    .join("");
}

/** Horizontal bars, one per row, the value printed after each bar. */
export function horizontalBars(
  rows: ReadonlyArray<{ readonly label: string; readonly value: number; readonly title?: string }>,
  options: { readonly label: string; readonly format?: (n: number) => string },
): string {
  const format = options.format ?? num;
  const labelWidth = Math.min(460, 12 + Math.max(40, ...rows.map((r) => r.label.length * 6.2)));
  const width = labelWidth + 380;
  const rowHeight = 20;
  const max = Math.max(1e-9, ...rows.map((r) => r.value));
  const body = rows
    .map((r, i) => {
      const y = i * rowHeight;
      const w = (r.value / max) * 300;
      return (
        `<text x="${labelWidth - 6}" y="${y + 14}" text-anchor="end">${esc(r.label)}</text>` +
        bar(
          labelWidth,
          y + 3,
          w,
          rowHeight - 6,
          colour(0),
          r.value,
          r.title ?? `${r.label}: ${format(r.value)}`,
        ) +
        `<text x="${labelWidth + w + 4}" y="${y + 14}">${esc(format(r.value))}</text>`
      );
    })
    .join("");
  return svg(width, Math.max(rowHeight, rows.length * rowHeight), body, options.label);
}

/** Horizontal bars grouped per row: one bar per series, with a legend. */
export function groupedBars(
  rows: ReadonlyArray<{ readonly label: string; readonly values: readonly number[] }>,
  series: readonly string[],
  options: { readonly label: string; readonly format?: (n: number) => string },
): string {
  const format = options.format ?? num;
  const labelWidth = Math.min(460, 12 + Math.max(40, ...rows.map((r) => r.label.length * 6.2)));
  const width = labelWidth + 380;
  const barHeight = 8;
  const rowHeight = series.length * barHeight + 8;
  const max = Math.max(1e-9, ...rows.flatMap((r) => r.values));
  const body = rows
    .map((r, i) => {
      const y = 20 + i * rowHeight;
      const bars = r.values
        .map((v, s) => {
          const w = (v / max) * 300;
          const by = y + s * barHeight;
          return (
            bar(
              labelWidth,
              by,
              w,
              barHeight - 1,
              colour(s),
              v,
              `${r.label}, ${series[s]}: ${format(v)}`,
            ) +
            `<text x="${labelWidth + w + 4}" y="${by + 7}" class="small">${esc(format(v))}</text>`
          );
        })
        .join("");
      return `<text x="${labelWidth - 6}" y="${y + rowHeight / 2}" text-anchor="end">${esc(r.label)}</text>${bars}`;
    })
    .join("");
  return svg(width, 20 + rows.length * rowHeight, legend(series, 0) + body, options.label);
}

/** Vertical stacked columns (e.g. run ends per time bucket), with a legend and x labels. */
export function stackedColumns(
  columns: ReadonlyArray<{
    readonly label: string;
    readonly parts: Readonly<Record<string, number>>;
  }>,
  series: readonly string[],
  options: { readonly label: string },
): string {
  const plotHeight = 160;
  const colWidth = Math.max(6, Math.min(28, Math.floor(640 / Math.max(1, columns.length))));
  const width = Math.max(360, 40 + columns.length * colWidth);
  const max = Math.max(1, ...columns.map((c) => series.reduce((n, s) => n + (c.parts[s] ?? 0), 0)));
  const top = 20;
  let body = legend(series, 0);
  body += `<text x="0" y="${top + 10}" class="small">${max}</text><line x1="30" y1="${top + plotHeight}" x2="${width}" y2="${top + plotHeight}" stroke="#999"/>`;
  columns.forEach((c, i) => {
    const x = 34 + i * colWidth;
    let y = top + plotHeight;
    series.forEach((s, k) => {
      const v = c.parts[s] ?? 0;
      if (v === 0) return;
      const h = (v / max) * plotHeight;
      y -= h;
      body += bar(x, y, colWidth - 2, h, colour(k), v, `${c.label}: ${s} ${v}`);
    });
  });
  const first = columns[0]?.label ?? "";
  const last = columns.at(-1)?.label ?? "";
  body += `<text x="34" y="${top + plotHeight + 14}" class="small">${esc(first)}</text>`;
  if (columns.length > 1) {
    body += `<text x="${width}" y="${top + plotHeight + 14}" text-anchor="end" class="small">${esc(last)}</text>`;
  }
  return svg(width, top + plotHeight + 20, body, options.label);
}
