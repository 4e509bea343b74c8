/**
 * Builds a revision's action template (`http`, `http_request` or `ssh`) and
 * checks it against the revision's input schema: every placeholder names a
 * declared parameter of a type that fits where it is placed, positions that
 * cannot be left empty (path segments, argv entries) use parameters that are
 * always present, no header or query name the agent can reach is reserved
 * (src/rules/http-headers.ts, query-names.ts), request overrides are fixed
 * text, and every declared parameter is used — an input the action ignores
 * would be silently dropped, which is exactly what a contract must not do.
 */
import { headerKey, isRequestMeaningHeader, reservedHeader } from '../../rules/http-headers.js';
import { SIGV4_OWNED_HEADERS, sigv4QueryParam } from '../../rules/sigv4-names.js';
import { methodOverrideParam, queryNameCollides, queryNameProblem } from '../../rules/query-names.js';
import { HEADER_NAME, HttpRequestShape, HttpShape, SshShape } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import { parsePathPattern, parsePathTemplate, type PathPattern } from '../templates/path-template.js';
import { findProperty, isScalarNode, type ObjectNode } from '../schema/schema-node.js';
import { checkShape, isRecord } from './shape-check.js';
import { isHeaderText } from '../text.js';
import { literalOf, parseStringTemplate, soleParam, type StringTemplate } from '../templates/string-template.js';
import type { Action, ArgvElement, BodyTemplate, HttpTarget, NamedTemplate, SshTarget, Target } from '../types.js';

/** The built targets, plus the names declared in the file (some may have failed to build). */
export class TargetTable extends Map<string, Target> {
  constructor(
    entries: Iterable<readonly [string, Target]>,
    readonly declared: DeclaredTargets,
  ) {
    super(entries);
  }
}

type Need = 'scalar' | 'any' | 'array';
type Presence = 'always' | 'maybe';

class Ctx {
  readonly used = new Set<string>();
  constructor(
    readonly input: ObjectNode,
    readonly sink: IssueSink,
  ) {}

  param(name: string, at: DocPath, need: Need, presence: Presence): void {
    this.used.add(name);
    const p = findProperty(this.input, name);
    if (p === undefined) return this.sink.add(at, `{${name}} is not a property of the input schema`);
    if (need === 'scalar' && !isScalarNode(p.node)) this.sink.add(at, `{${name}} must be a string, number, boolean or enum to be used here`);
    if (need === 'array' && !(p.node.kind === 'array' && isScalarNode(p.node.items))) this.sink.add(at, `{...${name}} must be an array of scalars`);
    if (presence === 'always' && p.presence !== 'required' && p.default === undefined) {
      this.sink.add(at, `{${name}} must be required or have a default, because this position cannot be left out`);
    }
  }

  template(source: string, at: DocPath, presence: Presence): StringTemplate | undefined {
    const t = parseStringTemplate(source);
    if (!t.ok) {
      this.sink.add(at, t.problem);
      return undefined;
    }
    for (const part of t.template.parts) {
      if (part.kind === 'splice') this.sink.add(at, `{...${part.param}} is only allowed as a whole argv element`);
      if (part.kind === 'param') this.param(part.param, at, 'scalar', presence);
    }
    return t.template;
  }
}

/** Targets that were declared but failed to build: their own issue is already reported. */
type DeclaredTargets = ReadonlySet<string>;

function targetOf<K extends Target['kind']>(targets: ReadonlyMap<string, Target>, name: string, kind: K, at: DocPath, sink: IssueSink): Extract<Target, { kind: K }> | undefined {
  const t = targets.get(name);
  if (t === undefined && targets instanceof TargetTable && targets.declared.has(name)) return undefined;
  if (t === undefined) sink.add(at, `unknown target "${name}"`);
  else if (t.kind !== kind) sink.add(at, `target "${name}" is an ${t.kind.toUpperCase()} target`);
  else return t as Extract<Target, { kind: K }>;
  return undefined;
}

function headerChecks(target: HttpTarget, headers: Record<string, string>, at: DocPath, ctx: Ctx | undefined, sink: IssueSink): NamedTemplate[] {
  const out: NamedTemplate[] = [];
  for (const [rawName, value] of Object.entries(headers)) {
    const p = [...at, rawName];
    const name = rawName.toLowerCase();
    const key = headerKey(name);
    const reserved = reservedHeader(name);
    if (!HEADER_NAME.test(rawName)) sink.add(p, 'is not a valid header name');
    else if (reserved !== undefined) sink.add(p, `header ${reserved} is reserved and cannot be set by a tool`);
    else if (target.auth.kind === 'header' && key === headerKey(target.auth.name)) sink.add(p, `header ${name} carries the target's credential`);
    else if (target.auth.kind === 'aws_sigv4' && SIGV4_OWNED_HEADERS.includes(key)) sink.add(p, `header ${name} is part of the target's AWS signature`);
    else if (out.some((h) => headerKey(h.name) === key)) sink.add(p, `header ${name} is set twice`);
    // Fixed tools may interpolate parameters; a broad tool's headers, and every header that
    // changes the request's meaning (it is part of the authority), are fixed text.
    let template: StringTemplate | undefined;
    if (ctx !== undefined && !isRequestMeaningHeader(name)) template = ctx.template(value, p, 'maybe');
    else {
      const parsed = parseStringTemplate(value);
      template = parsed.ok && literalOf(parsed.template) !== undefined ? parsed.template : undefined;
      if (template === undefined) {
        sink.add(p, ctx === undefined ? 'headers of a broad tool are fixed text (no placeholders)' : `header ${name} changes the method, path, host or client the target acts on, so it must be fixed text (no placeholders)`);
        if (parsed.ok) for (const part of parsed.template.parts) if (part.kind !== 'literal') ctx?.used.add(part.param);
      }
    }
    if (template === undefined) continue;
    const literal = template.parts.map((x) => (x.kind === 'literal' ? x.text : '')).join('');
    if (!isHeaderText(literal)) sink.add(p, 'header text may contain printable ASCII only (no CR, LF or NUL)');
    out.push({ name, value: template });
  }
  return out;
}

function bodyTemplate(raw: unknown, at: DocPath, ctx: Ctx): BodyTemplate | undefined {
  if (typeof raw === 'string') {
    const t = parseStringTemplate(raw);
    if (!t.ok) {
      ctx.sink.add(at, t.problem);
      return undefined;
    }
    const sole = soleParam(t.template);
    if (sole !== undefined && sole.kind === 'param') {
      ctx.param(sole.param, at, 'any', 'maybe');
      return { kind: 'param', param: sole.param };
    }
    const lit = literalOf(t.template);
    if (lit !== undefined) return { kind: 'literal', value: lit };
    const template = ctx.template(raw, at, 'maybe');
    return template === undefined ? undefined : { kind: 'text', template };
  }
  if (raw === null || typeof raw === 'number' || typeof raw === 'boolean') return { kind: 'literal', value: raw };
  if (Array.isArray(raw)) {
    const items = raw.map((x, i) => bodyTemplate(x, [...at, i], ctx));
    return items.every((x) => x !== undefined) ? { kind: 'array', items } : undefined;
  }
  if (isRecord(raw)) {
    const entries: (readonly [string, BodyTemplate])[] = [];
    for (const [k, v] of Object.entries(raw)) {
      const b = bodyTemplate(v, [...at, k], ctx);
      if (b !== undefined) entries.push([k, b]);
    }
    return { kind: 'object', entries };
  }
  ctx.sink.add(at, 'is not a JSON value');
  return undefined;
}

function buildHttp(raw: unknown, at: DocPath, ctx: Ctx, targets: ReadonlyMap<string, Target>): Action | undefined {
  const h = checkShape(HttpShape, raw, at, ctx.sink);
  if (h === undefined) return undefined;
  const target = targetOf(targets, h.target, 'http', [...at, 'target'], ctx.sink);
  const path = parsePathTemplate(h.path);
  if (!path.ok) ctx.sink.add([...at, 'path'], path.problem);
  else for (const seg of path.value.segments) for (const p of seg.parts) if (p.kind === 'param') ctx.param(p.param, [...at, 'path'], 'scalar', 'always');
  const query: NamedTemplate[] = [];
  for (const [name, value] of Object.entries(h.query ?? {})) {
    const p = [...at, 'query', name];
    const problem = queryNameProblem(name);
    if (problem !== undefined) ctx.sink.add(p, `is not a valid query parameter name: it ${problem}`);
    if (target?.auth.kind === 'query' && queryNameCollides(name, target.auth.name)) ctx.sink.add(p, `query parameter ${name} can be read as ${target.auth.name}, which carries the target's credential`);
    const signed = target?.auth.kind === 'aws_sigv4' ? sigv4QueryParam(name) : undefined;
    if (signed !== undefined) ctx.sink.add(p, `query parameter ${name} can be read as ${signed}, which is part of the target's AWS signature`);
    const t = ctx.template(value, p, 'maybe');
    const override = methodOverrideParam(name);
    if (t !== undefined && override !== undefined && literalOf(t) === undefined) ctx.sink.add(p, `query parameter ${name} can be read as ${override}, which overrides the method, so it must be fixed text (no placeholders)`);
    if (t !== undefined) query.push({ name, value: t });
  }
  const headers = target === undefined ? [] : headerChecks(target, h.headers ?? {}, [...at, 'headers'], ctx, ctx.sink);
  if (h.body !== undefined && (h.method === 'GET' || h.method === 'HEAD')) ctx.sink.add([...at, 'body'], `a ${h.method} request cannot have a body`);
  const body = h.body === undefined ? undefined : bodyTemplate(h.body, [...at, 'body'], ctx);
  if (body?.kind === 'object') {
    for (const [k, v] of body.entries) {
      const override = methodOverrideParam(k);
      if (override !== undefined && v.kind !== 'literal') ctx.sink.add([...at, 'body', k], `body field ${k} can be read as ${override}, which overrides the method, so it must be a fixed value`);
    }
  }
  if (target === undefined || !path.ok) return undefined;
  return { kind: 'http', target, method: h.method, path: path.value, query, headers, body };
}

function buildHttpRequest(raw: unknown, at: DocPath, sink: IssueSink, targets: ReadonlyMap<string, Target>): Action | undefined {
  const h = checkShape(HttpRequestShape, raw, at, sink);
  if (h === undefined) return undefined;
  const target = targetOf(targets, h.target, 'http', [...at, 'target'], sink);
  if (new Set(h.methods).size !== h.methods.length) sink.add([...at, 'methods'], 'lists a method twice');
  const paths: PathPattern[] = [];
  h.paths.forEach((source, i) => {
    const p = parsePathPattern(source);
    if (!p.ok) sink.add([...at, 'paths', i], p.problem);
    else if (paths.some((q) => q.shape === p.value.shape)) sink.add([...at, 'paths', i], 'repeats an earlier pattern');
    else paths.push(p.value);
  });
  if (target === undefined) return undefined;
  const headers = headerChecks(target, h.headers ?? {}, [...at, 'headers'], undefined, sink);
  return {
    kind: 'http_request',
    target,
    methods: h.methods,
    paths,
    headers: headers.map((x) => [x.name, literalOf(x.value) ?? ''] as const),
  };
}

function buildSsh(raw: unknown, at: DocPath, ctx: Ctx, targets: ReadonlyMap<string, Target>): Action | undefined {
  const s = checkShape(SshShape, raw, at, ctx.sink);
  if (s === undefined) return undefined;
  const target: SshTarget | undefined = targetOf(targets, s.target, 'ssh', [...at, 'target'], ctx.sink);
  const argv: ArgvElement[] = [];
  let programs: string[] = [];
  s.argv.forEach((source, i) => {
    const p = [...at, 'argv', i];
    if (source.includes('\u0000')) return ctx.sink.add(p, 'NUL cannot be part of an argument');
    const parsed = parseStringTemplate(source);
    if (!parsed.ok) return ctx.sink.add(p, parsed.problem);
    const t = parsed.template;
    const sole = soleParam(t);
    const lit = literalOf(t);
    if (i === 0) {
      if (lit !== undefined) {
        if (lit === '') ctx.sink.add(p, 'the program cannot be empty');
        programs = [lit];
        argv.push({ kind: 'literal', value: lit });
        return;
      }
      const prop = sole?.kind === 'param' ? findProperty(ctx.input, sole.param) : undefined;
      ctx.used.add(sole?.param ?? '');
      if (sole?.kind !== 'param' || prop === undefined || prop.presence !== 'required' || prop.node.kind !== 'enum' || !prop.node.values.every((v) => typeof v === 'string' && v !== '')) {
        return ctx.sink.add(p, 'argv[0] must be a fixed program or {param} where param is a required enum of program paths');
      }
      programs = prop.node.values as string[];
      argv.push({ kind: 'param', param: sole.param });
      return;
    }
    if (lit !== undefined) argv.push({ kind: 'literal', value: lit });
    else if (sole?.kind === 'splice') {
      ctx.param(sole.param, p, 'array', 'maybe');
      argv.push({ kind: 'splice', param: sole.param });
    } else if (sole?.kind === 'param') {
      ctx.param(sole.param, p, 'scalar', 'always');
      argv.push({ kind: 'param', param: sole.param });
    } else {
      for (const part of t.parts) {
        if (part.kind === 'splice') ctx.sink.add(p, `{...${part.param}} is only allowed as a whole argv element`);
        if (part.kind === 'param') ctx.param(part.param, p, 'scalar', 'always');
      }
      argv.push({ kind: 'text', template: t });
    }
  });
  if (target === undefined) return undefined;
  return { kind: 'ssh', target, argv, programs };
}

export type ActionKey = 'http' | 'http_request' | 'ssh';

/** Builds the action; `input` is undefined for broad HTTP tools, whose input Postern generates. */
export function buildAction(key: ActionKey, raw: unknown, at: DocPath, input: ObjectNode, sink: IssueSink, targets: ReadonlyMap<string, Target>): Action | undefined {
  if (key === 'http_request') return buildHttpRequest(raw, at, sink, targets);
  const ctx = new Ctx(input, sink);
  const action = key === 'http' ? buildHttp(raw, at, ctx, targets) : buildSsh(raw, at, ctx, targets);
  for (const p of input.properties) {
    if (!ctx.used.has(p.name)) sink.add([...at.slice(0, -1), 'input', 'properties', p.name], `is not used by the ${key} action (an ignored input would be silently dropped)`);
  }
  return action;
}
