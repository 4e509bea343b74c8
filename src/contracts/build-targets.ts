/**
 * Builds the catalog's targets: one HTTP origin or one SSH endpoint each, with
 * the credential that reaches it. Origins and hosts are normalized once here;
 * credential names are checked against the vault's names when the caller
 * provides them. A target is either `http:` or `ssh:`, never both.
 */
import { credentialHeaderProblem } from '../protocol/http-headers.js';
import { TargetTable } from './build-action.js';
import { HttpTargetShape, NAME, SshTargetShape } from './catalog-shape.js';
import type { DocPath, IssueSink } from './issues.js';
import { normalizeOrigin, normalizeSshHost } from './origin.js';
import { checkShape, isRecord } from './shape-check.js';
import type { HttpAuth, Target } from './types.js';
import { didYouMean } from '../protocol/suggest.js';

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
    const auth: HttpAuth = typeof t.auth === 'string' ? { kind: t.auth }
      : 'header' in t.auth ? { kind: 'header', name: t.auth.header.toLowerCase() }
        : 'query' in t.auth ? { kind: 'query', name: t.auth.query }
          : { kind: 'aws_sigv4', region: t.auth.aws_sigv4.region, service: t.auth.aws_sigv4.service };
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
