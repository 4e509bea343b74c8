/**
 * Fills an HTTP template (fixed or broad) with validated arguments. Path values
 * are confined to one segment (see path-template.ts); query keys and values are
 * percent-encoded; header values may not contain CR, LF, NUL or other control
 * or non-ASCII bytes, nor start or end with whitespace; the body is serialized
 * once, canonically, and that text is what is sent. Missing optional values
 * drop the query pair, header or body field that uses them.
 */
import { headerKey } from '../../rules/http-headers.js';
import { methodOverrideParam, queryNameCollides, queryNameProblem } from '../../rules/query-names.js';
import { sigv4QueryParam } from '../../rules/sigv4-names.js';
import { canonicalJson } from '../../rules/canonical.js';
import { composedSegmentProblem, encodeComponent, matchPath, segmentValueProblem } from '../templates/path-template.js';
import { RefusedValue, scalarText, type ResolvedHttp } from './resolved.js';
import type { StringTemplate } from '../templates/string-template.js';
import { isHeaderText } from '../text.js';
import type { BodyTemplate, HttpAction, HttpRequestAction, HttpTarget, JsonObject, JsonValue } from '../types.js';

/** Interpolates a string template; undefined when a referenced parameter is absent. */
function fill(t: StringTemplate, args: JsonObject, field: string): string | undefined {
  let out = '';
  for (const p of t.parts) {
    if (p.kind === 'literal') {
      out += p.text;
      continue;
    }
    const v = args[p.param];
    if (v === undefined) return undefined;
    out += scalarText(v, p.kind === 'param' ? p.param : field);
  }
  return out;
}

function checkHeaderValue(name: string, value: string, field: string): void {
  if (value.includes('\r') || value.includes('\n') || value.includes('\u0000')) throw new RefusedValue(field, `header ${name}: CR, LF and NUL are not allowed`);
  if (!isHeaderText(value)) throw new RefusedValue(field, `header ${name}: only printable ASCII is allowed`);
  if (value !== value.trim()) throw new RefusedValue(field, `header ${name}: must not start or end with whitespace`);
}

function fillPath(action: HttpAction, args: JsonObject): string {
  const out: string[] = [];
  for (const seg of action.path.segments) {
    let raw = '';
    let encoded = '';
    let field = 'path';
    for (const p of seg.parts) {
      if (p.kind === 'literal') {
        raw += p.text;
        encoded += p.text;
        continue;
      }
      field = p.param;
      const text = scalarText(args[p.param], p.param);
      const problem = segmentValueProblem(text);
      if (problem !== undefined) throw new RefusedValue(p.param, problem);
      raw += text;
      encoded += encodeComponent(text);
    }
    const isTrailing = seg.parts.length === 0;
    if (!isTrailing) {
      const problem = composedSegmentProblem(raw);
      if (problem !== undefined) throw new RefusedValue(field, problem);
    }
    out.push(encoded);
  }
  return '/' + out.join('/');
}

function fillBody(t: BodyTemplate, args: JsonObject): JsonValue | undefined {
  switch (t.kind) {
    case 'literal':
      return t.value;
    case 'param':
      return args[t.param];
    case 'text':
      return fill(t.template, args, 'body');
    case 'array':
      return t.items.map((i) => fillBody(i, args)).filter((v) => v !== undefined);
    case 'object': {
      const out: Record<string, JsonValue> = {};
      for (const [k, v] of t.entries) {
        const filled = fillBody(v, args);
        if (filled !== undefined) Object.defineProperty(out, k, { value: filled, enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
}

function queryString(pairs: readonly (readonly [string, string])[]): string {
  return pairs.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&');
}

function finish(
  target: HttpTarget,
  base: Pick<ResolvedHttp, 'tool' | 'revision' | 'method' | 'path'>,
  query: (readonly [string, string])[],
  headers: (readonly [string, string])[],
  body: JsonValue | undefined,
  idempotencyKey: string | undefined,
): ResolvedHttp {
  for (const [k, v] of query) {
    const problem = queryNameProblem(k);
    if (problem !== undefined) throw new RefusedValue('query', `a query parameter name ${problem}`);
    if (target.auth.kind === 'query' && queryNameCollides(k, target.auth.name)) throw new RefusedValue('query', `a query parameter can be read as ${target.auth.name}, which is reserved for the credential`);
    const signed = target.auth.kind === 'aws_sigv4' ? sigv4QueryParam(k) : undefined;
    if (signed !== undefined) throw new RefusedValue('query', `a query parameter can be read as ${signed}, which is part of the target's AWS signature`);
    if (v.includes('\u0000')) throw new RefusedValue('query', 'NUL is not allowed in the query');
  }
  const bodyText = body === undefined ? undefined : canonicalJson(body);
  if (bodyText !== undefined && !headers.some(([n]) => headerKey(n) === 'content-type')) headers.push(['content-type', 'application/json']);
  if (idempotencyKey !== undefined && target.idempotencyHeader === 'send') {
    checkHeaderValue('idempotency-key', idempotencyKey, 'idempotency_key');
    headers.push(['idempotency-key', idempotencyKey]);
  }
  const qs = queryString(query);
  return {
    kind: 'http',
    ...base,
    target: target.name,
    credential: target.credential,
    auth: target.auth,
    origin: target.origin,
    host: target.host,
    port: target.port,
    query,
    url: `${target.origin}${base.path}${qs === '' ? '' : `?${qs}`}`,
    headers,
    body,
    bodyText,
  };
}

export function resolveHttp(tool: string, revision: number, action: HttpAction, args: JsonObject, idempotencyKey: string | undefined): ResolvedHttp {
  const path = fillPath(action, args);
  const query: (readonly [string, string])[] = [];
  for (const q of action.query) {
    const v = fill(q.value, args, q.name);
    if (v !== undefined) query.push([q.name, v]);
  }
  const headers: (readonly [string, string])[] = [];
  for (const h of action.headers) {
    const v = fill(h.value, args, h.name);
    if (v === undefined) continue;
    checkHeaderValue(h.name, v, h.value.parts.find((p) => p.kind !== 'literal')?.param ?? h.name);
    headers.push([h.name, v]);
  }
  const body = action.body === undefined ? undefined : fillBody(action.body, args);
  return finish(action.target, { tool, revision, method: action.method, path }, query, headers, body, idempotencyKey);
}

export function resolveHttpRequest(tool: string, revision: number, action: HttpRequestAction, args: JsonObject, idempotencyKey: string | undefined): ResolvedHttp {
  const method = action.methods.find((m) => m === args['method']);
  if (method === undefined) throw new RefusedValue('method', `must be one of ${action.methods.join(', ')}`);
  const rawPath = args['path'];
  if (typeof rawPath !== 'string') throw new RefusedValue('path', 'must be a string');
  const matched = matchPath(action.paths, rawPath);
  if (!matched.ok) throw new RefusedValue('path', matched.problem);
  const rawQuery = args['query'];
  const query: (readonly [string, string])[] = [];
  if (typeof rawQuery === 'object' && rawQuery !== null && !Array.isArray(rawQuery)) {
    for (const k of Object.keys(rawQuery).sort()) {
      const override = methodOverrideParam(k);
      if (override !== undefined) throw new RefusedValue('query', `a query parameter can be read as ${override}, which would override the method`);
      query.push([k, scalarText((rawQuery as JsonObject)[k], `query.${k}`)]);
    }
  }
  const body = args['body'];
  if (body !== undefined && (method === 'GET' || method === 'HEAD')) throw new RefusedValue('body', `a ${method} request cannot have a body`);
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    // Frameworks that merge a JSON body into the request parameters (Laravel) read `_method` there too.
    for (const k of Object.keys(body)) {
      const override = methodOverrideParam(k);
      if (override !== undefined) throw new RefusedValue('body', `a body field can be read as ${override}, which would override the method`);
    }
  }
  return finish(action.target, { tool, revision, method, path: matched.value.path }, query, action.headers.map(([n, v]) => [n, v] as const), body, idempotencyKey);
}
