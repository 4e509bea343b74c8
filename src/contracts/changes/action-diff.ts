/**
 * Would an old call run the same request under the new revision? Compares two
 * action templates as an old call sees them: parts that use a parameter the old
 * revision did not have, which is optional and has no default, are absent for
 * old calls and are dropped before comparing (so adding an optional query
 * parameter is additive). Anything else that differs — method, path, a query
 * pair, a header, the body, an argv entry, the target — is reported, because
 * valid old arguments would now produce a different action. Also provides the
 * contract fingerprint used to detect revisions edited in place.
 */
import { canonicalJson } from '../../rules/canonical.js';
import { findProperty, type ObjectNode, type SchemaNode } from '../schema/schema-node.js';
import type { StringTemplate } from '../templates/string-template.js';
import type { Action, ArgvElement, BodyTemplate, JsonValue, NamedTemplate, Revision, Target } from '../types.js';

interface ActionDiff {
  /** Differences that change what existing calls do. */
  readonly changed: readonly string[];
  /** Reach that existing calls lose (broad tools): their calls would now fail. */
  readonly removed: readonly string[];
}

const tpl = (t: StringTemplate): string => t.parts.map((p) => (p.kind === 'literal' ? p.text.replaceAll('{', '{{').replaceAll('}', '}}') : p.kind === 'splice' ? `{...${p.param}}` : `{${p.param}}`)).join('');
const uses = (t: StringTemplate, dropped: ReadonlySet<string>): boolean => t.parts.some((p) => p.kind !== 'literal' && dropped.has(p.param));

function targetView(t: Target): JsonValue {
  return t.kind === 'http'
    ? { name: t.name, origin: t.origin, credential: t.credential, auth: t.auth, private: t.privateNetwork }
    : { name: t.name, host: t.host, port: t.port, user: t.user, credential: t.credential };
}

function bodyView(b: BodyTemplate | undefined, dropped: ReadonlySet<string>): JsonValue | undefined {
  if (b === undefined) return undefined;
  switch (b.kind) {
    case 'literal':
      return { literal: b.value };
    case 'param':
      return dropped.has(b.param) ? undefined : { param: b.param };
    case 'text':
      return uses(b.template, dropped) ? undefined : { text: tpl(b.template) };
    case 'array':
      return b.items.map((i) => bodyView(i, dropped)).filter((v) => v !== undefined);
    case 'object':
      return [...b.entries]
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .flatMap(([k, v]) => {
          const view = bodyView(v, dropped);
          return view === undefined ? [] : [[k, view]];
        });
  }
}

function mapDiff(what: string, a: readonly NamedTemplate[], b: readonly NamedTemplate[], dropped: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const bv = new Map(b.filter((x) => !uses(x.value, dropped)).map((x) => [x.name, tpl(x.value)]));
  const av = new Map(a.map((x) => [x.name, tpl(x.value)]));
  for (const [k, v] of av) {
    const w = bv.get(k);
    if (w === undefined) out.push(`${what} ${k} is no longer sent`);
    else if (w !== v) out.push(`${what} ${k}: ${v} → ${w}`);
  }
  for (const [k, w] of bv) if (!av.has(k)) out.push(`${what} ${k} is now sent (${w})`);
  return out;
}

function argvView(argv: readonly ArgvElement[], dropped: ReadonlySet<string>): string[] {
  return argv
    .filter((e) => !(e.kind === 'splice' && dropped.has(e.param)))
    .map((e) => (e.kind === 'literal' ? e.value.replaceAll('{', '{{').replaceAll('}', '}}') : e.kind === 'param' ? `{${e.param}}` : e.kind === 'splice' ? `{...${e.param}}` : tpl(e.template)));
}

/** Parameters of `to` that old calls never carry: new, optional, without default. */
function droppedFor(from: ObjectNode, to: ObjectNode): Set<string> {
  return new Set(to.properties.filter((p) => findProperty(from, p.name) === undefined && p.presence === 'optional' && p.default === undefined).map((p) => p.name));
}

export function diffActions(from: Revision, to: Revision): ActionDiff {
  const a: Action = from.action;
  const b: Action = to.action;
  if (a.kind !== b.kind) return { changed: [`action ${a.kind} → ${b.kind}`], removed: [] };
  const changed: string[] = [];
  const removed: string[] = [];
  if (canonicalJson(targetView(a.target)) !== canonicalJson(targetView(b.target))) changed.push(`target ${a.target.name} → ${b.target.name} (${canonicalJson(targetView(b.target))})`);
  const fi = from.input.node;
  const ti = to.input.node;
  const dropped = fi.kind === 'object' && ti.kind === 'object' ? droppedFor(fi, ti) : new Set<string>();
  if (a.kind === 'http' && b.kind === 'http') {
    if (a.method !== b.method) changed.push(`method ${a.method} → ${b.method}`);
    const ap = a.path.segments.map(tpl).join('/');
    const bp = b.path.segments.map(tpl).join('/');
    if (ap !== bp) changed.push(`path /${ap} → /${bp}`);
    changed.push(...mapDiff('query', a.query, b.query, dropped), ...mapDiff('header', a.headers, b.headers, dropped));
    if (canonicalJson(bodyView(a.body, new Set()) ?? null) !== canonicalJson(bodyView(b.body, dropped) ?? null)) changed.push('body template changed');
  } else if (a.kind === 'http_request' && b.kind === 'http_request') {
    for (const p of a.paths) if (!b.paths.some((q) => q.shape === p.shape)) removed.push(`path pattern ${p.source} removed`);
    if (canonicalJson(a.paths.map((p) => p.shape)) !== canonicalJson(b.paths.slice(0, a.paths.length).map((p) => p.shape)) && removed.length === 0) {
      changed.push('path patterns reordered (an old path may now match a different pattern)');
    }
    if (canonicalJson(a.headers) !== canonicalJson(b.headers)) changed.push('fixed headers changed');
  } else if (a.kind === 'ssh' && b.kind === 'ssh') {
    const av = argvView(a.argv, new Set());
    const bv = argvView(b.argv, dropped);
    if (canonicalJson(av) !== canonicalJson(bv)) changed.push(`argv ${av.join(' ')} → ${bv.join(' ')}`);
  }
  return { changed, removed };
}

/** A schema node as plain JSON, without descriptions (they are not part of the contract). */
function nodeView(n: SchemaNode): JsonValue {
  const strip = (x: unknown): JsonValue => JSON.parse(JSON.stringify(x)) as JsonValue;
  switch (n.kind) {
    case 'object':
      return {
        kind: n.kind,
        properties: n.properties.map((p) => ({ name: p.name, presence: p.presence, default: p.default ?? null, node: nodeView(p.node) })),
        additional: n.additional.kind === 'map' ? { kind: 'map', max: n.additional.maxProperties, node: nodeView(n.additional.node) } : { kind: n.additional.kind },
      };
    case 'array':
      return strip({ ...n, items: nodeView(n.items) });
    case 'union':
      return { kind: n.kind, options: n.options.map(nodeView) };
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
    case 'null':
    case 'enum':
    case 'json':
      return strip(n);
  }
}

/** Everything that defines what a revision accepts, returns and does; equal fingerprints = same contract. */
export function contractFingerprint(r: Revision): string {
  const a = r.action;
  const action: JsonValue =
    a.kind === 'http'
      ? { kind: a.kind, method: a.method, path: a.path.segments.map(tpl), query: a.query.map((q) => [q.name, tpl(q.value)]), headers: a.headers.map((h) => [h.name, tpl(h.value)]), body: bodyView(a.body, new Set()) ?? null }
      : a.kind === 'http_request'
        ? { kind: a.kind, methods: [...a.methods], paths: a.paths.map((p) => p.shape), headers: a.headers.map(([n, v]) => [n, v]) }
        : { kind: a.kind, argv: argvView(a.argv, new Set()) };
  return canonicalJson({
    input: nodeView(r.input.node),
    output: r.output === undefined ? null : nodeView(r.output.node),
    action,
    target: targetView(a.target),
    semantic_change: r.semanticChange ?? null,
  });
}
