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
 * (`journal_restored`, `journal_key_released`, `journal_gap_closed`, and a
 * `journal_started` that carries a gap): it is chained and anchored like
 * everything else, so it cannot be dropped without the anchor seeing it. A
 * key with a holder in the restored journal is decided by that holder, as
 * always.
 *
 * A gap outlives the journal it was journaled in: the journal a later
 * restore (or `anchor new-journal`) swaps out is the one that held it. So
 * every decision is also kept in the vault (`journal_gap`, a `GapRecord`,
 * vault/FORMAT.md §4), and each new journal's first entry *carries* the
 * record (`carried` of `journal_restored`, `gap` of `journal_started`): the
 * fold starts over from it, since it is the whole state up to that point.
 */
import type { SessionsJournal } from './sessions.js';
import type { SessionEventRow } from './types.js';

/** One key of a tool, as the gap records it. */
export interface GapKey {
  readonly tool: string;
  readonly key: string;
}

/**
 * The whole state of the gaps, as the vault keeps it and a new journal's first
 * entry carries it: the keys held (claimed and not released), the keys
 * released while part of a gap was unread, and whether part was unread.
 */
export interface GapRecord {
  readonly held: readonly GapKey[];
  readonly released: readonly GapKey[];
  readonly unread: boolean;
}

/** The most keys a record keeps in each list; past it the record is unread (every unknown key refused). */
export const MAX_RECORD_KEYS = 10_000;

export interface GapRefusal {
  readonly because: 'journal_gap_claimed' | 'journal_gap_unread';
  readonly phrase: string;
}

const id = (tool: string, key: string): string => `${tool}\u0000${key}`;

const unid = (k: string): GapKey => {
  const i = k.indexOf('\u0000');
  return { tool: k.slice(0, i), key: k.slice(i + 1) };
};

/** The keys of an event's list that are well-formed. */
function keysOf(list: unknown): GapKey[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((k: unknown) => {
    const r = k as Partial<GapKey> | null;
    return typeof r?.tool === 'string' && typeof r.key === 'string' ? [{ tool: r.tool, key: r.key }] : [];
  });
}

/** A carried record as an event holds it, or undefined when it holds none (a malformed one reads as unread: nothing runs blindly). */
function recordOf(v: unknown): GapRecord | undefined {
  if (v === undefined || v === null) return undefined;
  const r = v as Partial<Record<keyof GapRecord, unknown>>;
  return { held: keysOf(r.held), released: keysOf(r.released), unread: r.unread !== false };
}

const GAP_EVENTS = ['journal_started', 'journal_restored', 'journal_key_released', 'journal_gap_closed'] as const;

export class JournalGap {
  readonly #claimed = new Set<string>();
  readonly #released = new Set<string>();
  #unread = false;

  /** No restore, or none left open. */
  static none(): JournalGap {
    return new JournalGap();
  }

  /** The gap as the sessions journal's events leave it (those up to `upTo` only, when given). */
  static read(sessions: SessionsJournal, upTo = Number.MAX_SAFE_INTEGER): JournalGap {
    const g = new JournalGap();
    for (const e of sessions.daemonEvents(GAP_EVENTS)) if (e.seq <= upTo) g.#apply(e);
    return g;
  }

  /** The gap a record describes (the vault's, or one carried by a new journal). */
  static fromRecord(r: GapRecord | null): JournalGap {
    const g = new JournalGap();
    if (r !== null) g.#reset(r);
    return g;
  }

  #reset(r: GapRecord): void {
    this.#claimed.clear();
    this.#released.clear();
    for (const k of r.held) this.#claimed.add(id(k.tool, k.key));
    for (const k of r.released) this.#released.add(id(k.tool, k.key));
    this.#unread = r.unread;
  }

  /** Adds a restore's gap: its keys held (again), and unread unless read whole. */
  hold(keys: readonly GapKey[], complete: boolean): void {
    for (const k of keys) {
      this.#claimed.add(id(k.tool, k.key));
      this.#released.delete(id(k.tool, k.key));
    }
    if (!complete) this.#unread = true;
  }

  #apply(e: SessionEventRow): void {
    const d = e.data;
    if (e.type === 'journal_started') {
      const carried = recordOf(d['gap']);
      if (carried !== undefined) this.#reset(carried);
    } else if (e.type === 'journal_restored') {
      const carried = recordOf(d['carried']);
      if (carried !== undefined) this.#reset(carried);
      this.hold(keysOf(d['keys']), d['complete'] === true);
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

  /**
   * The whole state as a record, for the vault and the next journal. Past
   * MAX_RECORD_KEYS held keys it is unread (every unknown key refused), and
   * released keys past it are dropped (they are refused again): a record never
   * lets a key run that the state refuses.
   */
  record(): GapRecord | null {
    const held = [...this.#claimed].filter((k) => !this.#released.has(k));
    const unread = this.#unread || held.length > MAX_RECORD_KEYS;
    const released = unread ? [...this.#released] : [];
    if (held.length === 0 && !unread) return null;
    return { held: held.slice(0, MAX_RECORD_KEYS).map(unid), released: released.slice(0, MAX_RECORD_KEYS).map(unid), unread };
  }

  /** The keys held (claimed in a gap and not released), at most `max`. */
  heldKeys(max: number): GapKey[] {
    return [...this.#claimed].filter((k) => !this.#released.has(k)).slice(0, max).map(unid);
  }

  /** Whether every key the journal does not know is refused (part of a gap could not be read). */
  get unread(): boolean {
    return this.#unread;
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
