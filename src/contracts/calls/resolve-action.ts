/**
 * `resolveAction`: one revision + validated arguments → the exact request or
 * command. Pure and deterministic: the daemon calls it once, binds the approval
 * to its canonical digest, shows it on the approval card and hands the same
 * object to the executor. A value that cannot be placed safely yields
 * `refused` with the field to repair; nothing is guessed.
 */
import { canonicalDigest } from '../../rules/canonical.js';
import { RefusedValue, type ResolveResult, type ResolvedAction } from './resolved.js';
import { resolveHttp, resolveHttpRequest } from './resolve-http.js';
import { resolveSsh } from './resolve-ssh.js';
import type { JsonObject, Revision } from '../types.js';

export interface ResolveOptions {
  /** Forwarded as `Idempotency-Key` when the target honours it. */
  readonly idempotencyKey?: string | undefined;
}

export function resolveAction(revision: Revision, args: JsonObject, opts: ResolveOptions = {}): ResolveResult {
  const { tool, action } = revision;
  try {
    switch (action.kind) {
      case 'http':
        return { kind: 'resolved', action: resolveHttp(tool, revision.revision, action, args, opts.idempotencyKey) };
      case 'http_request':
        return { kind: 'resolved', action: resolveHttpRequest(tool, revision.revision, action, args, opts.idempotencyKey) };
      case 'ssh': {
        const input = revision.input.node;
        if (input.kind !== 'object') return { kind: 'refused', field: '(arguments)', problem: 'the input schema is not an object' };
        return { kind: 'resolved', action: resolveSsh(tool, revision.revision, action, input, args) };
      }
    }
  } catch (e) {
    if (e instanceof RefusedValue) return { kind: 'refused', field: e.field, problem: e.problem };
    throw e;
  }
}

/** SHA-256 of the canonical JSON of a resolved action: what an approval binds to, with the arguments. */
export function actionDigest(action: ResolvedAction): string {
  return canonicalDigest(JSON.parse(JSON.stringify(action))); // absent body/bodyText fields are simply left out
}
