/**
 * Merging one table, `[mcp_servers.postern]`, into a Codex config.toml without
 * a TOML library: the file is scanned line by line (multi-line strings are
 * skipped, so a header inside one is not taken for a table) and only that
 * table's lines — with its sub-tables — are appended or replaced. Every other
 * byte of the file is kept as it was. When `postern` is defined any other way
 * (an inline table, dotted keys under `[mcp_servers]` or at the root), the
 * merge refuses instead of guessing.
 */

export type TableMerge =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'write'; readonly text: string; readonly replaced: boolean }
  | { readonly kind: 'conflict'; readonly existing: string }
  | { readonly kind: 'unsupported'; readonly why: string };

/** A TOML basic string (JSON's escapes are TOML's, plus DEL). */
export function tomlString(s: string): string {
  return JSON.stringify(s).replace(/\u007f/g, '\\u007f');
}

/** Splits a dotted key (`a."b.c" . d`) into its parts, unquoted. */
export function keyParts(key: string): string[] {
  const parts: string[] = [];
  let cur = '';
  let quote: string | null = null;
  for (let i = 0; i < key.length; i++) {
    const c = key[i]!;
    if (quote !== null) {
      if (c === '\\' && quote === '"' && i + 1 < key.length) cur += key[++i]!;
      else if (c === quote) quote = null;
      else cur += c;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '.') {
      parts.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  parts.push(cur.trim());
  return parts;
}

const HEADER = /^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$/;
const KEY_VALUE = /^\s*((?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*'))*)\s*=/;

interface Line {
  readonly text: string;
  /** The table this line belongs to (for a header: the table it opens). */
  readonly table: readonly string[];
  readonly header: boolean;
  /** The full dotted key of a `key = value` line, table prefix included. */
  readonly key?: readonly string[];
}

/** Counts the unescaped occurrences of a multi-line string delimiter. */
function toggles(text: string, delim: string): number {
  return text.split(delim).length - 1;
}

function scan(lines: readonly string[]): Line[] {
  const out: Line[] = [];
  let table: string[] = [];
  let inString: string | null = null;
  for (const text of lines) {
    if (inString !== null) {
      if (toggles(text, inString) % 2 === 1) inString = null;
      out.push({ text, table, header: false });
      continue;
    }
    const h = HEADER.exec(text);
    if (h !== null && !text.trimStart().startsWith('#')) {
      table = keyParts(h[2]!);
      out.push({ text, table, header: true });
      continue;
    }
    const kv = KEY_VALUE.exec(text);
    const key = kv === null ? undefined : [...table, ...keyParts(kv[1]!)];
    for (const delim of ['"""', "'''"]) if (toggles(text, delim) % 2 === 1) inString = delim;
    out.push(key === undefined ? { text, table, header: false } : { text, table, header: false, key });
  }
  return out;
}

const startsWith = (a: readonly string[], b: readonly string[]): boolean => b.every((p, i) => a[i] === p);
const meaningful = (block: string): string => block.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#')).join('\n');

/** Merges `block` (which opens with the header of `table`) into `text`. */
export function mergeTable(text: string | undefined, table: readonly string[], block: string, force: boolean): TableMerge {
  if (text === undefined || text.trim() === '') return { kind: 'write', text: `${block}\n`, replaced: false };
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  const scanned = scan(lines);
  const ours = (l: Line): boolean => startsWith(l.table, table);
  for (const l of scanned) {
    if (l.key === undefined || ours(l)) continue;
    if (startsWith(l.key, table) || (l.key.length < table.length && startsWith(table, l.key))) {
      return { kind: 'unsupported', why: `it defines ${table.join('.')} in a form other than a [${table.join('.')}] table ("${l.text.trim().slice(0, 80)}")` };
    }
  }
  const first = scanned.findIndex((l) => l.header && ours(l));
  if (first === -1) {
    const body = text.endsWith('\n') ? text : `${text}${eol}`;
    return { kind: 'write', text: `${body}${eol}${block.split('\n').join(eol)}${eol}`, replaced: false };
  }
  let end = first + 1;
  while (end < scanned.length && !(scanned[end]!.header && !ours(scanned[end]!))) end++;
  // The table's trailing blank lines and comments belong to what follows it.
  let last = end;
  while (last > first + 1 && /^\s*(#.*)?$/.test(lines[last - 1]!)) last--;
  if (scanned.slice(end).some((l) => l.header && ours(l))) {
    return { kind: 'unsupported', why: `[${table.join('.')}] is split across the file` };
  }
  const existing = lines.slice(first, last).join('\n');
  if (meaningful(existing) === meaningful(block)) return { kind: 'unchanged' };
  if (!force) return { kind: 'conflict', existing };
  const merged = [...lines.slice(0, first), ...block.split('\n'), ...lines.slice(last)];
  return { kind: 'write', text: merged.join(eol), replaced: true };
}
