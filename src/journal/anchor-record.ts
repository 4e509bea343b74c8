/**
 * The journal anchor, the pure half, shared by anchor/ and checkpoint/: what
 * it records, its MAC, and the decision whether the journals (and the vault)
 * found at start are the ones it vouches for. No I/O here.
 *
 * The anchor lives outside the journals (`$POSTERN_HOME/journal.anchor`) and
 * holds: the journal id (random, made when the journal was created, stored in
 * both files), the (seq, head hash) of each chain, a counter that grows with
 * every anchor write, the vault generation and the catalog digest in force,
 * and the time. Its MAC is HMAC-SHA256 under a key the vault derives for this
 * purpose alone ("journal-anchor"), so only someone who can open the vault can
 * write an anchor that verifies.
 *
 * Judged both ways: a journal behind its anchor (fewer entries, or another
 * hash at the anchored seq) was rolled back, emptied or rewritten; entries
 * past the anchor are an unanchored tail, which a crash between a commit and
 * the next anchor write leaves behind and is adopted (see anchor/keeper.ts for why
 * that is safe: every keyed intent is anchored before it runs).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './json.js';
import type { JournalName } from './database.js';
import type { ChainHead } from './types.js';

export const ANCHOR_FORMAT = 'postern.journal-anchor/1';

export interface AnchorRecord {
  readonly format: typeof ANCHOR_FORMAT;
  readonly journal_id: string;
  /** Grows by one with every anchor write; never goes back while the anchor is kept. */
  readonly counter: number;
  readonly activity: ChainHead;
  readonly sessions: ChainHead;
  /** The highest vault generation seen. */
  readonly vault_generation: number;
  /** The digest of the accepted catalog in force when written. */
  readonly catalog_digest: string;
  /** ISO time of the write. */
  readonly at: string;
}

export interface StoredAnchor {
  readonly record: AnchorRecord;
  readonly mac: string;
}

const MAC_DOMAIN = 'postern journal anchor v1\n';

/**
 * The anchor's MAC, the one place it is computed: `sealAnchor` for writers,
 * and `reauthenticateAnchor` (anchor/file.ts) when the vault's keys change.
 */
export function anchorMac(key: Uint8Array, record: AnchorRecord): string {
  return createHmac('sha256', key).update(MAC_DOMAIN).update(canonicalJson(record)).digest('hex');
}

export function sealAnchor(key: Uint8Array, record: AnchorRecord): StoredAnchor {
  return { record, mac: anchorMac(key, record) };
}

export function anchorIsAuthentic(key: Uint8Array, stored: StoredAnchor): boolean {
  const expected = Buffer.from(anchorMac(key, stored.record), 'hex');
  const given = /^[0-9a-f]{64}$/.test(stored.mac) ? Buffer.from(stored.mac, 'hex') : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The journal as the vault recorded it at a save (vault/FORMAT.md §4, `journal`): its id and the anchored heads. */
export interface RecordedJournal {
  readonly id: string;
  readonly activity: ChainHead;
  readonly sessions: ChainHead;
  /** The checkpoint file at that save (checkpoint/vault-mark.ts); absent or null: not recorded. */
  readonly checkpoints?: { readonly count: number; readonly counter: number; readonly digest: string } | null;
}

/** Each journal file as found, for the judge. */
export interface FoundJournal {
  readonly journal_id: string | null;
  readonly head: ChainHead;
  /** The stored hash at `seq`; undefined when there is no such entry. */
  hashAt(seq: number): string | undefined;
}

export type JournalProblem =
  /** A journal file is gone (deleted). */
  | { readonly kind: 'missing'; readonly journal: JournalName }
  /** A journal file has no bytes (truncated). */
  | { readonly kind: 'empty'; readonly journal: JournalName }
  /** A file of another journal (or a fresh one) stands where the anchored one was. */
  | { readonly kind: 'replaced'; readonly journal: JournalName; readonly anchored_id: string; readonly found_id: string | null }
  /** Fewer entries than anchored: an older copy, or entries removed from the end. */
  | { readonly kind: 'rolled_back'; readonly journal: JournalName; readonly anchored_seq: number; readonly found_seq: number }
  /** The entry at the anchored seq has another hash: entries were rewritten (and re-chained). */
  | { readonly kind: 'rewritten'; readonly journal: JournalName; readonly seq: number }
  /** Journal files exist but the anchor does not. */
  | { readonly kind: 'anchor_missing' }
  /** The anchor file is not a well-formed anchor. */
  | { readonly kind: 'anchor_malformed' }
  /** The anchor's MAC does not verify with this vault. */
  | { readonly kind: 'anchor_forged' }
  /** No journal and no anchor, but the vault records that this home keeps one: all of it was removed together. */
  | { readonly kind: 'journal_lost'; readonly vault_id: string }
  /** The anchor names another journal than the one the vault recorded: an older journal and anchor were put back. */
  | { readonly kind: 'vault_names_other'; readonly vault_id: string; readonly anchored_id: string }
  /** The anchor is behind the heads the vault recorded at a save: an older journal and its anchor were put back. */
  | { readonly kind: 'behind_vault'; readonly journal: JournalName; readonly vault_seq: number; readonly anchored_seq: number };

export type AnchorVerdict =
  | {
      readonly kind: 'ok';
      /** Entries past the anchor in each journal (0 after a clean stop). */
      readonly tail: { readonly activity: number; readonly sessions: number };
    }
  | { readonly kind: 'journal_mismatch'; readonly problem: JournalProblem }
  | { readonly kind: 'vault_rolled_back'; readonly anchored: number; readonly found: number };

const JOURNALS: readonly JournalName[] = ['sessions', 'activity'];

function judgeOne(name: JournalName, anchored: ChainHead, anchoredId: string, found: FoundJournal): JournalProblem | number {
  if (found.journal_id !== anchoredId) return { kind: 'replaced', journal: name, anchored_id: anchoredId, found_id: found.journal_id };
  if (found.head.seq < anchored.seq) return { kind: 'rolled_back', journal: name, anchored_seq: anchored.seq, found_seq: found.head.seq };
  if (found.hashAt(anchored.seq) !== anchored.hash) return { kind: 'rewritten', journal: name, seq: anchored.seq };
  return found.head.seq - anchored.seq;
}

/**
 * Are these the anchored journals, and is the vault not older than the anchor?
 * Journal problems come first (sessions, then activity); `vaultGeneration`
 * undefined skips the vault check (a caller without the passphrase).
 */
export function judgeAnchor(anchor: Pick<AnchorRecord, 'journal_id' | 'activity' | 'sessions' | 'vault_generation'>, found: Readonly<Record<JournalName, FoundJournal>>, vaultGeneration: number | undefined): AnchorVerdict {
  const tail = { activity: 0, sessions: 0 };
  for (const name of JOURNALS) {
    const r = judgeOne(name, anchor[name], anchor.journal_id, found[name]);
    if (typeof r !== 'number') return { kind: 'journal_mismatch', problem: r };
    tail[name] = r;
  }
  if (vaultGeneration !== undefined && vaultGeneration < anchor.vault_generation) {
    return { kind: 'vault_rolled_back', anchored: anchor.vault_generation, found: vaultGeneration };
  }
  return { kind: 'ok', tail };
}

/**
 * Does the anchor agree with the journal the vault recorded at its last save
 * (FORMAT.md §4, `journal`)? The vault's heads may lag the anchor (it is
 * saved less often), never lead it. No mark (a vault older than format 4, or
 * one never saved since the journal began) says nothing.
 */
export function judgeAgainstVault(anchor: Pick<AnchorRecord, 'journal_id' | 'activity' | 'sessions'>, mark: RecordedJournal | null | undefined): JournalProblem | null {
  if (mark === null || mark === undefined) return null;
  if (mark.id !== anchor.journal_id) return { kind: 'vault_names_other', vault_id: mark.id, anchored_id: anchor.journal_id };
  for (const name of JOURNALS) {
    if (anchor[name].seq < mark[name].seq) return { kind: 'behind_vault', journal: name, vault_seq: mark[name].seq, anchored_seq: anchor[name].seq };
  }
  return null;
}

/** One line for a person: what is wrong with the journal. */
export function describeProblem(p: JournalProblem): string {
  switch (p.kind) {
    case 'missing':
      return `the ${p.journal} journal file is missing (deleted)`;
    case 'empty':
      return `the ${p.journal} journal file is empty (truncated)`;
    case 'replaced':
      return `the ${p.journal} journal is not the anchored one (journal id ${p.found_id ?? 'none'}, anchored ${p.anchored_id}): it was replaced`;
    case 'rolled_back':
      return `the ${p.journal} journal ends at seq ${p.found_seq} but the anchor records seq ${p.anchored_seq}: an older copy was put back or entries were removed`;
    case 'rewritten':
      return `the ${p.journal} journal's entry ${p.seq} is not the anchored one: entries were rewritten`;
    case 'anchor_missing':
      return 'the journal exists but its anchor file is missing';
    case 'anchor_malformed':
      return 'the journal anchor file is malformed';
    case 'anchor_forged':
      return 'the journal anchor does not verify with this vault (forged, or from another vault)';
    case 'journal_lost':
      return `the journal, its anchor and its checkpoints are gone, but the vault records journal ${p.vault_id}: they were removed, this is not a new home`;
    case 'vault_names_other':
      return `the anchor names journal ${p.anchored_id} but the vault records journal ${p.vault_id}: an older journal and its anchor were put back`;
    case 'behind_vault':
      return `the ${p.journal} journal's anchor records seq ${p.anchored_seq} but the vault recorded seq ${p.vault_seq} at a save: an older copy of the journal and its anchor was put back`;
  }
}
