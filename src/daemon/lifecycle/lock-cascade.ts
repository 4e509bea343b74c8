/**
 * What a lock takes with it, in order: waiting approvals are voided and
 * session grants revoked; authenticated SSH connections close with the keys
 * that opened them, kept-alive HTTP ones too; minted tokens are forgotten;
 * the lock is journaled; and the anchor gets its last write (the lock
 * included), then none. Entries journaled while locked are an unanchored
 * tail, adopted at the next start; a passphrase change (which locks this
 * daemon first) can then re-key the anchor without this daemon writing over
 * it. A clean stop writes the final anchor itself, after its last events.
 */
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { GrantStore } from '../../approvals/grants.js';
import type { HttpPool } from '../../executors/http/index.js';
import type { SshPool } from '../../executors/ssh/index.js';
import { isPosternError } from '../../rules/errors.js';
import type { EventBus } from '../services/events.js';
import type { JournalEvent } from '../services/journal-event.js';
import type { MintedTokens } from '../services/minted-tokens.js';

interface LockCascadeParts {
  readonly queue: ApprovalQueue;
  readonly grants: GrantStore;
  readonly ssh: SshPool;
  readonly http: HttpPool | null;
  readonly tokens: MintedTokens;
  readonly bus: EventBus;
  readonly anchor: { close(): void };
  readonly journalEvent: JournalEvent;
  readonly log: (line: string) => void;
  /** True once a clean stop has begun: it writes the final anchor itself. */
  readonly stopping: () => boolean;
}

export function lockCascade(p: LockCascadeParts): (reason: string) => void {
  return (reason) => {
    p.bus.emit({ type: 'daemon.locked', reason });
    const voided = p.queue.voidAll(`vault locked: ${reason}`);
    const revoked = p.grants.revokeAll();
    void p.ssh.close();
    void p.http?.close();
    p.tokens.clear();
    p.journalEvent(null, 'lock', { reason, voided_approvals: voided, revoked_grants: revoked.length });
    if (!p.stopping()) {
      try {
        p.anchor.close();
      } catch (e) {
        p.log(`journal anchor: ${isPosternError(e) ? e.message : 'final write failed'}`);
      }
    }
    p.log(`vault locked (${reason}); ${voided} pending approvals voided, ${revoked.length} grants revoked; restart the daemon to unlock`);
  };
}
