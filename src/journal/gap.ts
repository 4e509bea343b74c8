/**
 * The gap a restored journal leaves (`postern anchor restore-journal`,
 * docs/audit.md "Restoring an older journal"): the entries between the
 * backup's head and where the anchor (or the vault's record) said the
 * journal ended are gone, and an idempotency key claimed there is unknown to
 * the restored journal. Such a key must never run blindly:
 *
 *   a key the restore found claimed in the gap (read from what was left of
 *   the journal it replaced)               → OUTCOME_UNKNOWN
 *   any other key with no holder, while a gap whose keys could not all be
 *   read is open                           → OUTCOME_UNKNOWN (it may have
 *                                            been claimed in the unread part)
 *   after `anchor release-key TOOL KEY`    → that key runs
 *   after `anchor close-gap`               → every key of earlier restores runs
 *
 * The state is folded from the sessions journal's daemon events, in order
 * (`journal_restored`, `journal_key_released`, `journal_gap_closed`): it is
 * chained and anchored like everything else, so it cannot be dropped without
 * the anchor seeing it. A key with a holder in the restored journal is
 * decided by that holder, as always.
 */
import type { SessionsJournal } from './sessions.js';
import type { SessionEventRow } from './types.js';

/** One key of a tool, as the gap records it. */
export interface GapKey {
  readonly tool: string;
  readonly key: string;
}

/** What a `journal_restored` event holds. */
export interface RestoredGap {
  readonly backup: { readonly activity: number; readonly sessions: number };
  readonly anchored: { readonly activity: number; readonly sessions: number };
  /** Keys read as claimed in the gap. */
  readonly keys: readonly GapKey[];
  /** Every entry of the gap was read (so no other key can have been claimed there). */
  readonly complete: boolean;
}

export interface GapRefusal {
  readonly because: 'journal_gap_claimed' | 'journal_gap_unread';
  readonly phrase: string;
}

const id = (tool: string, key: string): string => `${tool}\u0000${key}`;

export const GAP_EVENTS = ['journal_restored', 'journal_key_released', 'journal_gap_closed'] as const;

export class JournalGap {
  readonly #claimed = new Set<string>();
  readonly #released = new Set<string>();
  #unread = false;

  /** No restore, or none left open. */
  static none(): JournalGap {
    return new JournalGap();
  }

  /** The gap as the sessions journal's events leave it. */
  static read(sessions: SessionsJournal): JournalGap {
    const g = new JournalGap();
    for (const e of sessions.daemonEvents(GAP_EVENTS)) g.#apply(e);
    return g;
  }

  #apply(e: SessionEventRow): void {
    const d = e.data;
    if (e.type === 'journal_restored') {
      const keys = Array.isArray(d['keys']) ? (d['keys'] as unknown[]) : [];
      for (const k of keys) {
        const r = k as Partial<GapKey> | null;
        if (typeof r?.tool === 'string' && typeof r.key === 'string') {
          this.#claimed.add(id(r.tool, r.key));
          this.#released.delete(id(r.tool, r.key));
        }
      }
      if (d['complete'] !== true) this.#unread = true;
    } else if (e.type === 'journal_key_released') {
      if (typeof d['tool'] === 'string' && typeof d['key'] === 'string') this.#released.add(id(d['tool'], d['key']));
    } else if (e.type === 'journal_gap_closed') {
      this.#claimed.clear();
      this.#released.clear();
      this.#unread = false;
    }
  }

  /** Whether any key is held by a gap. */
  get open(): boolean {
    return this.#unread || [...this.#claimed].some((k) => !this.#released.has(k));
  }

  /** One line for `doctor` while a gap holds keys, or null. */
  describe(): string | null {
    if (!this.open) return null;
    const held = [...this.#claimed].filter((k) => !this.#released.has(k)).length;
    const unread = this.#unread ? '; part of it could not be read, so every key the journal does not know is refused too' : '';
    return `a restored journal's gap holds ${held} key(s) read as claimed there${unread}: calls with them are refused OUTCOME_UNKNOWN`;
  }

  /** Why a key with no holder in the journal must not run, or undefined when it may. */
  refusal(tool: string, key: string): GapRefusal | undefined {
    const k = id(tool, key);
    if (this.#released.has(k)) return undefined;
    if (this.#claimed.has(k)) return { because: 'journal_gap_claimed', phrase: 'it was claimed in the part of the journal lost when an older backup was restored, so its effect is unknown' };
    if (this.#unread) return { because: 'journal_gap_unread', phrase: 'an older backup of the journal was restored and part of what came after it could not be read, so this key may have been claimed there' };
    return undefined;
  }
}
