/**
 * Reads catalog text as YAML 1.2 (core schema: no timestamps, no implicit
 * types beyond JSON's) into plain JSON-like data. Refused: files over 1 MiB,
 * duplicate keys, unknown tags, alias expansion beyond a small budget (alias
 * bombs), and values JSON cannot hold (binary, NaN, Infinity). Also returns a
 * locator that maps a document path to its line, for error messages.
 */
import { LineCounter, isNode, parseDocument, type Document } from 'yaml';
import { catalogInvalid, IssueSink, type DocPath, type Locator } from '../issues.js';

export const MAX_CATALOG_BYTES = 1_048_576;
const MAX_ALIAS_COUNT = 100;

interface YamlDocument {
  readonly value: unknown;
  readonly locate: Locator;
}

function locator(doc: Document, lines: LineCounter): Locator {
  return (path: DocPath) => {
    for (let n = path.length; n >= 0; n--) {
      const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range !== undefined && node.range !== null) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

function checkPlain(value: unknown, path: DocPath, sink: IssueSink): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) sink.add(path, 'numbers must be finite (no .inf or .nan)');
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkPlain(v, [...path, i], sink));
    return;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '__proto__') sink.add([...path, k], 'this key is reserved');
      else checkPlain(v, [...path, k], sink);
    }
    return;
  }
  sink.add(path, 'is not a plain YAML/JSON value (binary, sets and custom tags are not supported)');
}

/**
 * The line of a tool in catalog text (its key), or of one of its revisions (the list item whose
 * `revision` is `revision`); undefined when the text does not parse or holds no such entry.
 * For pointing at a change (CI annotations), never for deciding anything.
 */
export function catalogLineOf(text: string, fileName: string): (tool: string, revision?: number) => number | undefined {
  let doc: YamlDocument;
  try {
    doc = readYaml(text, fileName);
  } catch {
    return () => undefined;
  }
  const tools = (doc.value as { tools?: Record<string, { revisions?: { revision?: unknown }[] }> } | null)?.tools;
  return (tool, revision) => {
    const entry = tools !== undefined && Object.hasOwn(tools, tool) ? tools[tool] : undefined;
    if (entry === undefined) return undefined;
    if (revision !== undefined && Array.isArray(entry.revisions)) {
      const i = entry.revisions.findIndex((r) => r?.revision === revision);
      if (i >= 0) return doc.locate(['tools', tool, 'revisions', i]);
    }
    return doc.locate(['tools', tool]);
  };
}

export function readYaml(text: string, fileName: string): YamlDocument {
  const lines = new LineCounter();
  const noLines: Locator = () => undefined;
  if (Buffer.byteLength(text, 'utf8') > MAX_CATALOG_BYTES) {
    throw catalogInvalid(fileName, [{ path: [], message: `the file is larger than ${MAX_CATALOG_BYTES} bytes` }], noLines);
  }
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false, version: '1.2', schema: 'core', merge: false, strict: true });
  const sink = new IssueSink();
  for (const e of [...doc.errors, ...doc.warnings]) {
    const message = e.code === 'DUPLICATE_KEY' ? 'duplicate key' : e.message.split('\n')[0] ?? e.code;
    sink.add([], message, lines.linePos(e.pos[0]).line);
  }
  if (sink.count > 0) throw catalogInvalid(fileName, sink.issues, noLines);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    const why = e instanceof Error ? e.message : 'cannot be read';
    throw catalogInvalid(fileName, [{ path: [], message: `YAML aliases: ${why}` }], noLines);
  }
  const locate = locator(doc, lines);
  checkPlain(value, [], sink);
  if (sink.count > 0) throw catalogInvalid(fileName, sink.issues, locate);
  return { value, locate };
}
