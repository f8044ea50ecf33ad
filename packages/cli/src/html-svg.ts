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

/** Width of a text at 11px, generously: labels are placed so that none overlaps another. */
const textWidth = (text: string, px = 11) => text.length * px * 0.62;

/** A text cut to fit `width` at 11px, ending with `…` when cut (the whole text in its title). */
function fit(text: string, width: number): string {
  const max = Math.max(4, Math.floor(width / (11 * 0.62)));
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * A legend, wrapped onto as many rows of 14px as `width` needs; answers its markup and height.
 */
function legend(
  series: readonly string[],
  y: number,
  width: number,
): { body: string; height: number } {
  let x = 0;
  let row = 0;
  const body = series
    .map((name, i) => {
      const w = 24 + textWidth(name, 10);
      if (x > 0 && x + w > width) {
        x = 0;
        row += 1;
      }
      const top = y + row * 14;
      const item = `<rect x="${num(x)}" y="${top}" width="10" height="10" fill="${colour(i)}"/><text x="${num(x + 14)}" y="${top + 9}" class="legend">${esc(name)}</text>`;
      x += w;
      return item;
    })
    .join("");
  return { body, height: (row + 1) * 14 };
}

/** Horizontal bars, one per row, the value printed after each bar. */
export function horizontalBars(
  rows: ReadonlyArray<{
    readonly label: string;
    readonly value: number;
    readonly title?: string;
    /** Written after the value (e.g. what the bar's count is made of), cut to fit. */
    readonly note?: string;
  }>,
  options: { readonly label: string; readonly format?: (n: number) => string },
): string {
  const format = options.format ?? num;
  const labelWidth = Math.min(360, 12 + Math.max(40, ...rows.map((r) => textWidth(r.label))));
  const notes = rows.some((r) => r.note !== undefined);
  const width = labelWidth + (notes ? 700 : 380);
  const rowHeight = 20;
  const max = Math.max(1e-9, ...rows.map((r) => r.value));
  const body = rows
    .map((r, i) => {
      const y = i * rowHeight;
      const w = (r.value / max) * 300;
      const value = format(r.value);
      const after = r.note === undefined ? value : `${value}  ${r.note}`;
      return (
        `<text x="${labelWidth - 6}" y="${y + 14}" text-anchor="end">${esc(fit(r.label, labelWidth - 10))}<title>${esc(r.label)}</title></text>` +
        bar(
          labelWidth,
          y + 3,
          w,
          rowHeight - 6,
          colour(0),
          r.value,
          r.title ?? `${r.label}: ${value}`,
        ) +
        `<text x="${num(labelWidth + w + 4)}" y="${y + 14}">${esc(fit(after, width - labelWidth - w - 8))}</text>`
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
  const labelWidth = Math.min(360, 12 + Math.max(40, ...rows.map((r) => textWidth(r.label))));
  const width = labelWidth + 380;
  // Bars tall enough that the value labels of neighbouring bars (10px) do not overlap.
  const barHeight = 11;
  const rowHeight = series.length * barHeight + 10;
  const key = legend(series, 0, width);
  const max = Math.max(1e-9, ...rows.flatMap((r) => r.values));
  const body = rows
    .map((r, i) => {
      const y = key.height + 6 + i * rowHeight;
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
            // A zero is the missing bar: no label crowding the axis.
            (v === 0
              ? ""
              : `<text x="${num(labelWidth + w + 4)}" y="${by + 9}" class="small">${esc(format(v))}</text>`)
          );
        })
        .join("");
      return `<text x="${labelWidth - 6}" y="${y + rowHeight / 2}" text-anchor="end">${esc(fit(r.label, labelWidth - 10))}<title>${esc(r.label)}</title></text>${bars}`;
    })
    .join("");
  return svg(width, key.height + 6 + rows.length * rowHeight, key.body + body, options.label);
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
  const totals = columns.map((c) => series.reduce((n, s) => n + (c.parts[s] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const key = legend(series, 0, width);
  // Room above the tallest column for its count, written upright or, in narrow columns, turned.
  const upright = colWidth >= textWidth(String(max), 10) + 2;
  const room = upright ? 14 : textWidth(String(max), 10) + 6;
  const top = key.height + room;
  let body = key.body;
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
    const total = totals[i] ?? 0;
    if (total === 0) return;
    const cx = x + (colWidth - 2) / 2;
    body += upright
      ? `<text x="${num(cx)}" y="${num(y - 3)}" text-anchor="middle" class="small count">${total}</text>`
      : `<text transform="translate(${num(cx + 3)},${num(y - 3)}) rotate(-90)" class="small count">${total}</text>`;
  });
  const first = columns[0]?.label ?? "";
  const last = columns.at(-1)?.label ?? "";
  body += `<text x="34" y="${top + plotHeight + 14}" class="small">${esc(first)}</text>`;
  if (columns.length > 1) {
    body += `<text x="${width}" y="${top + plotHeight + 14}" text-anchor="end" class="small">${esc(last)}</text>`;
  }
  return svg(width, top + plotHeight + 20, body, options.label);
}
