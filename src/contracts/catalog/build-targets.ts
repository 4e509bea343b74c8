/**
 * Builds the catalog's targets: one HTTP origin or one SSH endpoint each, with
 * the credential that reaches it. Origins and hosts are normalized once here;
 * credential names are checked against the vault's names when the caller
 * provides them. A target is either `http:` or `ssh:`, never both.
 */
import { credentialHeaderProblem } from '../../rules/http-headers.js';
import { queryNameProblem } from '../../rules/query-names.js';
import { TargetTable } from './build-action.js';
import { HttpTargetShape, NAME, SshTargetShape } from './catalog-shape.js';
import type { DocPath, IssueSink } from '../issues.js';
import { normalizeOrigin, normalizeSshHost } from './origin.js';
import { checkShape, isRecord } from './shape-check.js';
import { buildGateway } from '../gateway/gateway-shape.js';
import type { HttpAuth, Target } from '../types.js';
import type { z } from 'zod';

type HttpTargetShapeOut = z.infer<typeof HttpTargetShape>;
import { didYouMean } from '../../rules/suggest.js';

/** A fixed endpoint of a credential (token endpoint, API base): an origin (same rules as the target's) and a plain path. */
function endpointUrl(raw: string, privateNetwork: 'allowed' | 'refused', at: DocPath, sink: IssueSink): string | undefined {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*)(\/[^?#]*)?$/.exec(raw);
  if (m === null) {
    sink.add(at, `${JSON.stringify(raw)} must be scheme://host[:port]/path with no query or fragment`);
    return undefined;
  }
  const o = normalizeOrigin(m[1] ?? '', privateNetwork);
  if (!o.ok) {
    sink.add(at, `${JSON.stringify(raw)} ${o.problem}`);
    return undefined;
  }
  const path = (m[2] ?? '').replace(/\/+$/, '');
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$/.test(path) || path.split('/').some((s) => s === '.' || s === '..')) {
    sink.add(at, `${JSON.stringify(raw)} has a path with characters or segments not allowed here`);
    return undefined;
  }
  return o.value.origin + path;
}

function authOf(raw: HttpTargetShapeOut['auth'], privateNetwork: 'allowed' | 'refused', at: DocPath, sink: IssueSink): HttpAuth | undefined {
  if (typeof raw === 'string') return { kind: raw };
  if ('header' in raw) return { kind: 'header', name: raw.header.toLowerCase() };
  if ('query' in raw) {
    const problem = queryNameProblem(raw.query);
    if (problem === undefined) return { kind: 'query', name: raw.query };
    sink.add([...at, 'query'], `is not a valid query parameter name: it ${problem}`);
    return undefined;
  }
  if ('aws_sigv4' in raw) return { kind: 'aws_sigv4', region: raw.aws_sigv4.region, service: raw.aws_sigv4.service };
  if ('oauth_client_credentials' in raw) {
    const tokenUrl = endpointUrl(raw.oauth_client_credentials.token_url, privateNetwork, [...at, 'oauth_client_credentials', 'token_url'], sink);
    return tokenUrl === undefined ? undefined : { kind: 'oauth_client_credentials', tokenUrl, scopes: raw.oauth_client_credentials.scopes ?? [] };
  }
  if ('oauth_refresh_token' in raw) {
    const tokenUrl = endpointUrl(raw.oauth_refresh_token.token_url, privateNetwork, [...at, 'oauth_refresh_token', 'token_url'], sink);
    return tokenUrl === undefined ? undefined : { kind: 'oauth_refresh_token', tokenUrl, scopes: raw.oauth_refresh_token.scopes ?? [] };
  }
  const api = endpointUrl(raw.github_app.api, privateNetwork, [...at, 'github_app', 'api'], sink);
  return api === undefined ? undefined : { kind: 'github_app', api };
}

function buildOne(name: string, raw: unknown, at: DocPath, sink: IssueSink, known: ReadonlySet<string> | undefined): Target | undefined {
  if (!isRecord(raw)) {
    sink.add(at, 'must be a map with one key, http or ssh');
    return undefined;
  }
  const keys = Object.keys(raw);
  if (keys.length !== 1 || (keys[0] !== 'http' && keys[0] !== 'ssh')) {
    sink.add(at, `must have exactly one key, http or ssh (found ${keys.join(', ') || 'none'})`);
    return undefined;
  }
  const checkCredential = (credential: string, where: DocPath): void => {
    if (known !== undefined && !known.has(credential)) sink.add(where, `unknown credential "${credential}"${didYouMean(credential, known)} (add it with postern secret add)`);
  };
  if (keys[0] === 'http') {
    const p = [...at, 'http'];
    const t = checkShape(HttpTargetShape, raw['http'], p, sink);
    if (t === undefined) return undefined;
    checkCredential(t.credential, [...p, 'credential']);
    const privateNetwork = t.allow_private === true ? 'allowed' : 'refused';
    const o = normalizeOrigin(t.origin, privateNetwork);
    if (!o.ok) {
      sink.add([...p, 'origin'], `${JSON.stringify(t.origin)} ${o.problem}`);
      return undefined;
    }
    const auth = authOf(t.auth, privateNetwork, [...p, 'auth'], sink);
    if (auth === undefined) return undefined;
    const headerProblem = auth.kind === 'header' ? credentialHeaderProblem(auth.name) : undefined;
    if (headerProblem !== undefined) sink.add([...p, 'auth', 'header'], headerProblem);
    return {
      kind: 'http',
      name,
      origin: o.value.origin,
      scheme: o.value.scheme,
      host: o.value.host,
      port: o.value.port,
      credential: t.credential,
      auth,
      idempotencyHeader: t.idempotency_header === true ? 'send' : 'omit',
      privateNetwork,
      ...(t.limits === undefined ? {} : { limits: t.limits }),
    };
  }
  const p = [...at, 'ssh'];
  const t = checkShape(SshTargetShape, raw['ssh'], p, sink);
  if (t === undefined) return undefined;
  checkCredential(t.credential, [...p, 'credential']);
  const h = normalizeSshHost(t.host);
  if (!h.ok) {
    sink.add([...p, 'host'], `${JSON.stringify(t.host)} ${h.problem}`);
    return undefined;
  }
  return {
    kind: 'ssh',
    name,
    host: h.host,
    port: t.port ?? 22,
    user: t.user,
    hostKey: t.host_key === undefined ? { state: 'untrusted' } : { state: 'pinned', fingerprint: t.host_key },
    credential: t.credential,
    ...(t.limits === undefined ? {} : { limits: t.limits }),
    ...(t.gateway === undefined ? {} : { gateway: buildGateway(t.gateway) }),
  };
}

export function buildTargets(raw: Record<string, unknown>, sink: IssueSink, known: ReadonlySet<string> | undefined): TargetTable {
  const out = new TargetTable([], new Set(Object.keys(raw)));
  for (const [name, value] of Object.entries(raw)) {
    const at = ['targets', name];
    if (!NAME.test(name)) {
      sink.add(at, 'target names use lowercase letters, digits, ".", "_" or "-" (at most 64)');
      continue;
    }
    const t = buildOne(name, value, at, sink, known);
    if (t !== undefined) out.set(name, t);
  }
  return out;
}
