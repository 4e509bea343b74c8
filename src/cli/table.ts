/**
 * Plain-text tables for CLI output: left-aligned columns, two spaces apart,
 * as wide as the widest a value may take on a terminal (cellWidth), each value
 * padded by the cells it is drawn in (padCells), not by its length, so a wide
 * value does not push the columns after it out of line.
 */
import { cellWidth, padCells } from '../rules/terminal-text.js';

export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(cellWidth(h), ...rows.map((r) => cellWidth(r[i] ?? ''))));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === cells.length - 1 ? c : padCells(c, widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
