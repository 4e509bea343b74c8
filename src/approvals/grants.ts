/**
 * Session grants: "this agent session may call this tool, at this authority,
 * without asking again". Bound to (session, tool, authority digest); revoked
 * when the session ends or the vault locks. In memory only — a restart or a
 * lock starts over, which errs on the side of asking.
 */
import { authorityDigest, type Authority } from '../contracts/index.js';

export interface Grant {
  readonly sessionId: string;
  readonly tool: string;
  readonly authorityDigest: string;
  readonly authority: Authority;
  readonly grantedAt: string;
  readonly grantedBy: string;
  readonly approvalId: string;
}

export class GrantStore {
  readonly #grants = new Map<string, Grant>();

  static key(sessionId: string, tool: string): string {
    return `${sessionId}\u0000${tool}`;
  }

  get(sessionId: string, tool: string): Grant | undefined {
    return this.#grants.get(GrantStore.key(sessionId, tool));
  }

  give(g: Omit<Grant, 'authorityDigest'>): Grant {
    const grant: Grant = { ...g, authorityDigest: authorityDigest(g.authority) };
    this.#grants.set(GrantStore.key(g.sessionId, g.tool), grant);
    return grant;
  }

  /** Revokes every grant of a session; returns what was revoked. */
  revokeSession(sessionId: string): Grant[] {
    const gone = [...this.#grants.values()].filter((g) => g.sessionId === sessionId);
    for (const g of gone) this.#grants.delete(GrantStore.key(g.sessionId, g.tool));
    return gone;
  }

  revokeAll(): Grant[] {
    const gone = [...this.#grants.values()];
    this.#grants.clear();
    return gone;
  }

  list(): Grant[] {
    return [...this.#grants.values()];
  }
}
