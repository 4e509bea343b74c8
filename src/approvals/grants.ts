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
  /** The revision the operator approved. */
  readonly revision: number;
  readonly authorityDigest: string;
  readonly authority: Authority;
  readonly grantedAt: string;
  readonly grantedBy: string;
  readonly approvalId: string;
}

/** Told of every grant given and revoked (the daemon's event bus). A throwing listener is ignored. */
interface GrantListener {
  added(g: Grant): void;
  revoked(g: Grant, reason: string): void;
}

export class GrantStore {
  readonly #grants = new Map<string, Grant>();
  readonly #listener: GrantListener | undefined;

  constructor(listener?: GrantListener) {
    this.#listener = listener;
  }

  #tell(fn: (l: GrantListener) => void): void {
    if (this.#listener === undefined) return;
    try {
      fn(this.#listener);
    } catch {
      // the grant itself stands either way
    }
  }

  static key(sessionId: string, tool: string): string {
    return `${sessionId}\u0000${tool}`;
  }

  get(sessionId: string, tool: string): Grant | undefined {
    return this.#grants.get(GrantStore.key(sessionId, tool));
  }

  give(g: Omit<Grant, 'authorityDigest'>): Grant {
    const grant: Grant = { ...g, authorityDigest: authorityDigest(g.authority) };
    const k = GrantStore.key(g.sessionId, g.tool);
    const before = this.#grants.get(k);
    this.#grants.set(k, grant);
    if (before !== undefined) this.#tell((l) => l.revoked(before, 'replaced by a newer grant'));
    this.#tell((l) => l.added(grant));
    return grant;
  }

  /** Revokes the grant given by approval `approvalId`; undefined when there is none. */
  revoke(approvalId: string, reason: string): Grant | undefined {
    const g = [...this.#grants.values()].find((x) => x.approvalId === approvalId);
    if (g === undefined) return undefined;
    this.#grants.delete(GrantStore.key(g.sessionId, g.tool));
    this.#tell((l) => l.revoked(g, reason));
    return g;
  }

  /** Revokes every grant of a session; returns what was revoked. */
  revokeSession(sessionId: string, reason = 'session ended'): Grant[] {
    const gone = [...this.#grants.values()].filter((g) => g.sessionId === sessionId);
    for (const g of gone) {
      this.#grants.delete(GrantStore.key(g.sessionId, g.tool));
      this.#tell((l) => l.revoked(g, reason));
    }
    return gone;
  }

  revokeAll(reason = 'vault locked'): Grant[] {
    const gone = [...this.#grants.values()];
    this.#grants.clear();
    for (const g of gone) this.#tell((l) => l.revoked(g, reason));
    return gone;
  }

  list(): Grant[] {
    return [...this.#grants.values()];
  }
}
