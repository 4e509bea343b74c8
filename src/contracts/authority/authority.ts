/**
 * Authority: everything a revision can reach — credentials, origins (scheme,
 * host, port), methods, path patterns, the fixed headers, query pairs and
 * top-level body fields that make a server act on another method, path, host
 * or client (request meaning), SSH endpoints (host, port, user), programs and argv templates —
 * plus its effect class. `widensAuthority(a, b)` fails closed: it reports "no
 * widening" only when every element of b is provably inside a (equal, or a
 * path pattern that literally contains it) and the request meaning is exactly
 * the same (an added, changed or removed override changes what runs, so it
 * counts either way); otherwise it lists each difference, in words. Session
 * grants are bound to `authorityDigest`, so any change of reach voids them.
 */
import { headerKey, isRequestMeaningHeader } from '../../rules/http-headers.js';
import { methodOverrideParam } from '../../rules/query-names.js';
import { canonicalDigest, canonicalJson } from '../../rules/canonical.js';
import { pathShapeWithin } from '../templates/path-template.js';
import { shapeOf } from '../templates/string-template.js';
import type { StringTemplate } from '../templates/string-template.js';
import { Effects, type ArgvElement, type Authority, type SshEndpoint, type BodyTemplate, type Catalog, type Effect, type HttpAction, type HttpTarget, type HttpRequestAction, type Revision, type Tool } from '../types.js';

export type { Authority, SshEndpoint };

export type Widening = { readonly widens: false } | { readonly widens: true; readonly reasons: readonly string[] };

const sortedUnique = (xs: readonly string[]): string[] => [...new Set(xs)].sort();

function argvShape(el: ArgvElement): string {
  switch (el.kind) {
    case 'literal':
      return el.value.replaceAll('{', '{{').replaceAll('}', '}}');
    case 'param':
      return '{}';
    case 'splice':
      return '{...}';
    case 'text':
      return shapeOf(el.template);
  }
}

/** The text of a fixed value; a template (refused by the catalog for these names) shows its shape. */
const fixedText = (t: StringTemplate): string => shapeOf(t);

/** A body field's fixed value as JSON; anything else fails closed to its kind. */
function bodyText(b: BodyTemplate): string {
  switch (b.kind) {
    case 'literal':
      return JSON.stringify(b.value);
    case 'text':
      return JSON.stringify(shapeOf(b.template));
    case 'param':
      return '{}';
    case 'array':
    case 'object':
      return `(${b.kind})`;
  }
}

/** The headers, query pairs and body fields of an HTTP action that change what the target acts on. */
function requestMeaningOf(a: HttpAction | HttpRequestAction): string[] {
  const headers: readonly (readonly [string, string])[] = a.kind === 'http' ? a.headers.map((h) => [h.name, fixedText(h.value)] as const) : a.headers;
  const out = headers.filter(([n]) => isRequestMeaningHeader(n)).map(([n, v]) => `header ${headerKey(n)}: ${v}`);
  if (a.kind === 'http') {
    for (const q of a.query) if (methodOverrideParam(q.name) !== undefined) out.push(`query ${q.name}=${fixedText(q.value)}`);
    if (a.body?.kind === 'object') for (const [k, v] of a.body.entries) if (methodOverrideParam(k) !== undefined) out.push(`body ${k}=${bodyText(v)}`);
  }
  return sortedUnique(out);
}

/** Where a target's credential is exchanged for a token (OAuth token endpoint, GitHub API): an origin its secret reaches too. */
function tokenEndpointOrigins(auth: HttpTarget['auth']): string[] {
  const url = auth.kind === 'oauth_client_credentials' || auth.kind === 'oauth_refresh_token' ? auth.tokenUrl : auth.kind === 'github_app' ? auth.api : undefined;
  if (url === undefined) return [];
  const u = new URL(url);
  const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
  return [`${u.protocol}//${u.hostname.replace(/^\[|\]$/g, '')}:${port}`];
}

/**
 * The reach of each revision, worked out once: a revision (and the tool's
 * effect it is read with) is fixed for the life of the catalog snapshot that
 * holds it, so every call planned against it shares one frozen value.
 */
const authorities = new WeakMap<Revision, { readonly effect: Tool['effect']; readonly authority: Authority }>();
const digests = new WeakMap<Authority, string>();

/** The reach of one revision of a tool. `catalog` is accepted for symmetry; revisions carry their resolved target. */
export function authorityOf(tool: Tool, revision: Revision, _catalog?: Catalog): Authority {
  const known = authorities.get(revision);
  if (known !== undefined && known.effect === tool.effect) return known.authority;
  const authority = deepFreeze(reachOf(tool, revision));
  authorities.set(revision, { effect: tool.effect, authority });
  return authority;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

function reachOf(tool: Tool, revision: Revision): Authority {
  const base = { effect: tool.effect, privateNetwork: 'refused' as 'allowed' | 'refused', origins: [] as string[], methods: [] as string[], paths: [] as string[], requestMeaning: [] as string[], ssh: [] as SshEndpoint[], programs: [] as string[], commands: [] as string[][] };
  const a = revision.action;
  switch (a.kind) {
    case 'http':
    case 'http_request': {
      const t = a.target;
      return {
        ...base,
        credentials: [t.credential],
        origins: sortedUnique([`${t.scheme}://${t.host}:${t.port}`, ...tokenEndpointOrigins(t.auth)]),
        methods: a.kind === 'http' ? [a.method] : sortedUnique(a.methods),
        paths: a.kind === 'http' ? [a.path.shape] : sortedUnique(a.paths.map((p) => p.shape)),
        requestMeaning: requestMeaningOf(a),
        privateNetwork: t.privateNetwork,
      };
    }
    case 'ssh': {
      const t = a.target;
      return {
        ...base,
        credentials: [t.credential],
        ssh: [{ host: t.host, port: t.port, user: t.user }],
        programs: sortedUnique(a.programs),
        commands: [a.argv.map(argvShape)],
      };
    }
  }
}

/** Stable SHA-256 (hex) of an authority: set order does not matter. */
export function authorityDigest(a: Authority): string {
  const known = digests.get(a);
  if (known !== undefined) return known;
  const d = digestOf(a);
  // Only frozen authorities (authorityOf's) are remembered: another may still change.
  if (Object.isFrozen(a)) digests.set(a, d);
  return d;
}

function digestOf(a: Authority): string {
  return canonicalDigest({
    ...a,
    credentials: sortedUnique(a.credentials),
    origins: sortedUnique(a.origins),
    methods: sortedUnique(a.methods),
    paths: sortedUnique(a.paths),
    requestMeaning: sortedUnique(a.requestMeaning),
    ssh: sortedUnique(a.ssh.map((e) => canonicalJson(e))),
    programs: sortedUnique(a.programs),
    commands: sortedUnique(a.commands.map((c) => canonicalJson(c))),
  });
}

function splitOrigin(o: string): { scheme: string; host: string; port: string } {
  const m = /^([a-z]+):\/\/(.*):(\d+)$/.exec(o);
  return m === null ? { scheme: '', host: o, port: '' } : { scheme: m[1] ?? '', host: m[2] ?? '', port: m[3] ?? '' };
}

function originReason(a: readonly string[], o: string): string {
  const b = splitOrigin(o);
  const same = a.map(splitOrigin).filter((x) => x.host === b.host);
  if (same.length === 0) return `new host ${b.host}:${b.port}`;
  if (!same.some((x) => x.port === b.port)) return `new port ${b.host}:${b.port}`;
  return `new scheme ${b.scheme} for ${b.host}:${b.port}`;
}

function sshReason(a: readonly SshEndpoint[], e: SshEndpoint): string {
  const same = a.filter((x) => x.host === e.host);
  if (same.length === 0) return `new SSH host ${e.host}:${e.port}`;
  if (!same.some((x) => x.port === e.port)) return `new SSH port ${e.host}:${e.port}`;
  return `new SSH user ${e.user}@${e.host}:${e.port}`;
}

/** Whether b reaches anything a does not. Fails closed. */
export function widensAuthority(a: Authority, b: Authority): Widening {
  const reasons: string[] = [];
  const rank = (e: Effect): number => Effects.indexOf(e);
  if (rank(b.effect) > rank(a.effect)) reasons.push(`effect ${a.effect} → ${b.effect}`);
  for (const c of sortedUnique(b.credentials)) if (!a.credentials.includes(c)) reasons.push(`new credential ${c}`);
  for (const o of sortedUnique(b.origins)) if (!a.origins.includes(o)) reasons.push(originReason(a.origins, o));
  for (const m of sortedUnique(b.methods)) if (!a.methods.includes(m)) reasons.push(`new method ${m}`);
  for (const p of sortedUnique(b.paths)) if (!a.paths.some((q) => pathShapeWithin(q, p))) reasons.push(`new path ${p}`);
  for (const m of sortedUnique(b.requestMeaning)) if (!a.requestMeaning.includes(m)) reasons.push(`new request override ${m}`);
  for (const m of sortedUnique(a.requestMeaning)) if (!b.requestMeaning.includes(m)) reasons.push(`request override removed ${m}`);
  if (b.privateNetwork === 'allowed' && a.privateNetwork !== 'allowed') reasons.push('private and loopback addresses allowed');
  for (const e of b.ssh) if (!a.ssh.some((x) => x.host === e.host && x.port === e.port && x.user === e.user)) reasons.push(sshReason(a.ssh, e));
  for (const p of sortedUnique(b.programs)) if (!a.programs.includes(p)) reasons.push(`new program ${p}`);
  for (const c of b.commands) {
    const key = canonicalJson(c);
    if (!a.commands.some((x) => canonicalJson(x) === key)) reasons.push(`new command ${c.join(' ')}`);
  }
  return reasons.length === 0 ? { widens: false } : { widens: true, reasons: [...new Set(reasons)] };
}

/** The authority of running `commands` (argv lists) of `programs` as `effect` on an SSH endpoint with `credential` (the SSH gateway's calls). */
export function sshReachAuthority(endpoint: SshEndpoint & { readonly credential: string }, effect: Effect, programs: readonly string[], commands: readonly (readonly string[])[]): Authority {
  return Object.freeze({
    effect,
    credentials: [endpoint.credential],
    origins: [],
    methods: [],
    paths: [],
    requestMeaning: [],
    privateNetwork: 'refused',
    ssh: [{ host: endpoint.host, port: endpoint.port, user: endpoint.user }],
    programs: [...programs],
    commands: [...commands].sort((a, b) => (a.join(' ') < b.join(' ') ? -1 : 1)),
  });
}
