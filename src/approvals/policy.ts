/**
 * Which approval a call needs. One pure function, one place for the rule:
 *
 *   required = the tool's policy (none / session / per-call),
 *   raised to per-call when the revision that will run widens authority over
 *   the revision the session planned against, or over the authority a session
 *   grant was given for.
 *
 * A session grant applies only when its authority digest equals the current
 * one; a changed but not wider authority asks again (session scope allowed),
 * a wider one asks per call. The decision is a tagged union with reasons,
 * never a boolean.
 */
import { authorityDigest, widensAuthority, type Authority } from '../contracts/index.js';
import type { Grant } from './grants.js';

export type ApprovalPolicy = 'none' | 'session' | 'per-call';

export type ApprovalRequirement =
  | { readonly kind: 'auto'; readonly reason: string }
  | { readonly kind: 'granted'; readonly grant: Grant; readonly reason: string }
  | {
      readonly kind: 'ask';
      /** `session` lets the operator grant the rest of the session; `per-call` does not. */
      readonly scope: 'session' | 'per-call';
      readonly reasons: readonly string[];
      /** What widened, when that is why the call needs a per-call approval. */
      readonly widening: readonly string[];
    };

interface ApprovalInput {
  readonly policy: ApprovalPolicy;
  /** Authority of the revision that will execute. */
  readonly current: Authority;
  /** Authority of the revision this session last listed, when it differs from the current one. */
  readonly seen?: Authority | undefined;
  /** This session's grant for this tool, if any. */
  readonly grant?: Grant | undefined;
}

export function requiredApproval(input: ApprovalInput): ApprovalRequirement {
  const digest = authorityDigest(input.current);
  if (input.seen !== undefined) {
    const w = widensAuthority(input.seen, input.current);
    if (w.widens) {
      return {
        kind: 'ask',
        scope: 'per-call',
        reasons: ['the revision that runs widens the authority of the one this session listed'],
        widening: w.reasons,
      };
    }
  }
  if (input.grant !== undefined) {
    if (input.grant.authorityDigest === digest) {
      return { kind: 'granted', grant: input.grant, reason: 'session grant for this authority' };
    }
    const w = widensAuthority(input.grant.authority, input.current);
    if (w.widens) {
      return {
        kind: 'ask',
        scope: 'per-call',
        reasons: ['the tool now reaches beyond what the session grant covered'],
        widening: w.reasons,
      };
    }
    if (input.policy !== 'none') {
      return { kind: 'ask', scope: input.policy === 'per-call' ? 'per-call' : 'session', reasons: ['the tool authority changed since the session grant'], widening: [] };
    }
  }
  switch (input.policy) {
    case 'none':
      return { kind: 'auto', reason: 'the tool needs no approval' };
    case 'session':
      return { kind: 'ask', scope: 'session', reasons: ['the tool needs approval once per session'], widening: [] };
    case 'per-call':
      return { kind: 'ask', scope: 'per-call', reasons: ['the tool needs approval for every call'], widening: [] };
  }
}
