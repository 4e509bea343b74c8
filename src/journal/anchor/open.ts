/**
 * Opening the journals against their anchor — the daemon's way in, and the
 * operator commands' (`postern anchor …`):
 *
 *   no anchor, no journal files     → a new home: a new journal (new id) and its
 *                                     first anchor; `journal_started` journaled —
 *                                     unless the vault records a journal, or a
 *                                     signed checkpoint exists (refused: all of it
 *                                     was removed together)
 *   no anchor, journal files        → refused (anchor_missing)
 *   anchor behind the vault's record→ refused (the vault names another journal,
 *                                     or recorded later heads at a save)
 *   journals behind a checkpoint    → refused, as `audit verify --unlock` reports
 *                                     it (rolled back, replaced, a counter signed
 *                                     twice)
 *   anchor malformed / MAC fails    → refused (anchor_malformed / anchor_forged)
 *   a journal file missing or empty → refused, and nothing is created
 *   journal id, seq or hash differ  → refused before recovery writes anything
 *   vault older than the anchor     → VAULT_ROLLED_BACK, unless the operator
 *                                     accepts it (`acceptVault`, journaled)
 *   entries past the anchor         → adopted (a crash's unanchored tail), journaled
 *
 * Then recovery runs, a fresh anchor is written (heads, counter + 1, the
 * highest vault generation, the catalog digest) and the keeper advances it
 * with every commit. `inspectAnchor` is the read-only judgement for `doctor`,
 * `audit verify` and `anchor status`: with the key it checks the MAC; without
 * it it can only compare the journals with what the anchor claims.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import { PosternError } from '../../rules/errors.js';
import { GENESIS_HASH } from '../chain.js';
import { openJournals, type JournalFacts, type Journals, type OpenOptions } from '../index.js';
import { anchorMismatch, readAnchor } from './file.js';
import { journalPresence, sizeOf } from './presence.js';
import { AnchorKeeper } from './keeper.js';
import { readCheckpoints } from '../checkpoint/file.js';
import { checkpointRefusal, judgeCheckpointFile } from '../checkpoint/inspect.js';
import { highestCounter } from '../checkpoint/record.js';
import { publicKeyOf } from '../checkpoint/signature.js';
import { ANCHOR_FORMAT, anchorIsAuthentic, judgeAgainstVault, judgeAnchor, type AnchorRecord, type RecordedJournal, type AnchorVerdict, type JournalProblem, type StoredAnchor } from './record.js';

export interface AnchorContext {
  readonly journalDir: string;
  readonly anchorPath: string;
  /** The vault's journal-anchor key. */
  readonly key: Uint8Array;
  readonly vaultGeneration: number;
  readonly catalogDigest: string;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /** The checkpoint file and the vault's journal-checkpoint seed: signed checkpoints are checked at start and written when given. */
  readonly checkpoints?: { readonly path: string; readonly seed: Uint8Array };
  /** The journal the vault recorded (vault/FORMAT.md §4, `journal`); null or undefined when it records none. */
  readonly vaultJournal?: RecordedJournal | null;
  /** Outcomes the last daemon had but could not journal: written once the journals are admitted, before recovery. */
  readonly settle?: OpenOptions['settle'];
}

export interface AnchoredJournals {
  readonly journals: Journals;
  readonly keeper: AnchorKeeper;
  /** What start found: a new journal, or the anchored one (with its tail). */
  readonly found: { readonly kind: 'new' } | { readonly kind: 'anchored'; readonly tail: { readonly activity: number; readonly sessions: number }; readonly vaultAccepted: { from: number; to: number } | null };
  /** Closes the journals, then writes the final anchor. */
  close(): void;
}

function firstRecord(journalId: string, ctx: AnchorContext, counter: number): AnchorRecord {
  const empty = { seq: 0, hash: GENESIS_HASH };
  return { format: ANCHOR_FORMAT, journal_id: journalId, counter, activity: empty, sessions: empty, vault_generation: ctx.vaultGeneration, catalog_digest: ctx.catalogDigest, at: ctx.clock.now().toISOString() };
}

function vaultRolledBack(anchored: number, found: number): PosternError {
  return new PosternError(
    'VAULT_ROLLED_BACK',
    `the vault is generation ${found}, older than generation ${anchored} recorded in the journal anchor: an older vault.pvlt was put back, which undoes later secret rotations, removals and passphrase changes; restore the newest vault, or accept this one with \`postern anchor accept-vault\``,
    { details: { anchored_generation: anchored, found_generation: found } },
  );
}

/**
 * Refuses journals the signed checkpoints do not vouch for, under the vault's
 * own key — what `audit verify --unlock` reports: behind the last checkpoint
 * of their journal, another journal, a counter signed twice. `facts`
 * undefined: there are no journal files.
 */
function refuseUnvouched(ctx: AnchorContext, facts: JournalFacts | undefined): void {
  if (ctx.checkpoints === undefined) return;
  const line = checkpointRefusal(judgeCheckpointFile(ctx.checkpoints.path, facts, { kind: 'missing', journal: 'activity' }, { vaultKey: publicKeyOf(ctx.checkpoints.seed) }));
  if (line === null) return;
  throw new PosternError(
    'JOURNAL_ANCHOR_MISMATCH',
    `the signed checkpoints do not vouch for this journal: ${line}; a completed idempotency key could run again on it, so the daemon will not start: restore the newest journal, or start a new one with \`postern anchor new-journal\``,
    { details: { reason: 'checkpoint_mismatch' } },
  );
}

/** A counter no checkpoint carries yet: an anchor put back never makes the keeper sign a counter twice. */
function freshCounter(ctx: AnchorContext, counter: number): number {
  return ctx.checkpoints === undefined ? counter : Math.max(counter, highestCounter(readCheckpoints(ctx.checkpoints.path)));
}

function openWithKeeper(ctx: AnchorContext, record: AnchorRecord, opts: { journalId?: string; admit?: (f: JournalFacts) => void }): { journals: Journals; keeper: AnchorKeeper } {
  let keeper: AnchorKeeper | undefined;
  const counter = freshCounter(ctx, record.counter);
  const journals = openJournals(ctx.journalDir, {
    clock: ctx.clock,
    exclusive: true,
    ...(opts.journalId === undefined ? {} : { journalId: opts.journalId }),
    ...(opts.admit === undefined ? {} : { admit: opts.admit }),
    ...(ctx.settle === undefined ? {} : { settle: ctx.settle }),
    onCommit: (j, h, d) => keeper?.onCommit(j, h, d),
    onDurableCommit: (j, h) => keeper?.onDurableCommit(j, h) ?? Promise.resolve(),
  });
  try {
    const facts = journals.facts();
    // The bases as last read: the final checkpoint is written after the journals are closed.
    let bases = { activity: facts.activity.base, sessions: facts.sessions.base };
    const currentBases = (): typeof bases => {
      try {
        const f = journals.facts();
        bases = { activity: f.activity.base, sessions: f.sessions.base };
      } catch {
        // closed: nothing can have changed them since
      }
      return bases;
    };
    keeper = new AnchorKeeper({
      path: ctx.anchorPath,
      key: ctx.key,
      record: { ...record, counter, activity: facts.activity.head, sessions: facts.sessions.head, vault_generation: Math.max(record.vault_generation, ctx.vaultGeneration), catalog_digest: ctx.catalogDigest },
      clock: ctx.clock,
      log: ctx.log,
      ...(ctx.checkpoints === undefined
        ? {}
        : {
            checkpoints: {
              path: ctx.checkpoints.path,
              seed: ctx.checkpoints.seed,
              bases: currentBases,
            },
          }),
    });
    keeper.writeNow();
    return { journals, keeper };
  } catch (e) {
    journals.close();
    throw e;
  }
}

function handle(journals: Journals, keeper: AnchorKeeper, found: AnchoredJournals['found']): AnchoredJournals {
  return {
    journals,
    keeper,
    found,
    close() {
      journals.close();
      keeper.close();
    },
  };
}

/** The stored anchor, authenticated with the key, or the refusal. */
function authenticAnchor(ctx: AnchorContext): StoredAnchor | undefined {
  const stored = readAnchor(ctx.anchorPath, ctx.key);
  if (stored !== undefined && !anchorIsAuthentic(ctx.key, stored)) throw anchorMismatch({ kind: 'anchor_forged' });
  return stored;
}

/** Opens the journals for the daemon (or an operator command), refusing any that do not match the anchor. */
export function openAnchoredJournals(ctx: AnchorContext, opts: { readonly acceptVault?: boolean } = {}): AnchoredJournals {
  const stored = authenticAnchor(ctx);
  const presence = journalPresence(ctx.journalDir);
  if (stored === undefined) {
    if (presence.kind !== 'none') throw anchorMismatch({ kind: 'anchor_missing' });
    if (ctx.vaultJournal !== undefined && ctx.vaultJournal !== null) throw anchorMismatch({ kind: 'journal_lost', vault_id: ctx.vaultJournal.id });
    refuseUnvouched(ctx, undefined);
    const id = randomUUID();
    const { journals, keeper } = openWithKeeper(ctx, firstRecord(id, ctx, 0), { journalId: id });
    journals.sessions.event(null, 'journal_started', { journal_id: id, reason: 'new home', previous: null });
    return handle(journals, keeper, { kind: 'new' });
  }
  if (presence.kind === 'none') throw anchorMismatch({ kind: 'missing', journal: 'activity' });
  if (presence.kind === 'problem') throw anchorMismatch(presence.problem);
  let verdict: AnchorVerdict | undefined;
  const anchor = stored.record;
  const { journals, keeper } = openWithKeeper(ctx, anchor, {
    admit: (facts) => {
      verdict = judgeAnchor(anchor, facts, ctx.vaultGeneration);
      if (verdict.kind === 'journal_mismatch') throw anchorMismatch(verdict.problem);
      if (verdict.kind === 'vault_rolled_back' && opts.acceptVault !== true) throw vaultRolledBack(verdict.anchored, verdict.found);
      // An older vault carries an older record of the journal: only a vault not behind the anchor is compared.
      if (verdict.kind === 'ok') {
        const behind = judgeAgainstVault(anchor, ctx.vaultJournal);
        if (behind !== null) throw anchorMismatch(behind);
      }
      refuseUnvouched(ctx, facts);
    },
  });
  let vaultAccepted: { from: number; to: number } | null = null;
  let tail = { activity: 0, sessions: 0 };
  if (verdict?.kind === 'vault_rolled_back') {
    vaultAccepted = { from: verdict.anchored, to: verdict.found };
    // The operator's decision: the anchor now records the generation found.
    keeper.acceptVaultGeneration(verdict.found);
    journals.sessions.event(null, 'vault_generation_accepted', { anchored_generation: verdict.anchored, accepted_generation: verdict.found, by: 'operator' });
  } else if (verdict?.kind === 'ok') {
    tail = verdict.tail;
    if (tail.activity + tail.sessions > 0) {
      journals.sessions.event(null, 'anchor_tail_adopted', { activity_entries: tail.activity, sessions_entries: tail.sessions, anchor_counter: anchor.counter });
    }
  }
  keeper.flush(true);
  return handle(journals, keeper, { kind: 'anchored', tail, vaultAccepted });
}

/**
 * `postern anchor new-journal`: moves the journal directory aside (kept, as
 * `journal.replaced-<time>`), starts a new journal with a new id, anchors it
 * (the counter continues from an authentic old anchor) and journals the
 * replacement with what the old anchor said. The caller holds the daemon lock.
 */
export function startNewJournal(ctx: AnchorContext, reason: string): { journalId: string; movedTo: string | null; previous: AnchorRecord | null } {
  let previous: AnchorRecord | null = null;
  let previousState: string;
  try {
    previous = authenticAnchor(ctx)?.record ?? null;
    previousState = previous === null ? 'none' : 'authentic';
  } catch (e) {
    if (!(e instanceof PosternError) || e.code !== 'JOURNAL_ANCHOR_MISMATCH') throw e;
    previousState = String(e.details['reason']);
  }
  let movedTo: string | null = null;
  if (sizeOf(ctx.journalDir) !== undefined) {
    movedTo = join(dirname(ctx.journalDir), `journal.replaced-${ctx.clock.now().toISOString().replace(/[:.]/g, '-')}`);
    try {
      renameSync(ctx.journalDir, movedTo);
    } catch (e) {
      throw new PosternError('FILE_IO', `cannot move ${ctx.journalDir} aside: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  mkdirSync(ctx.journalDir, { recursive: true, mode: 0o700 });
  const id = randomUUID();
  const { journals, keeper } = openWithKeeper(ctx, firstRecord(id, ctx, previous?.counter ?? 0), { journalId: id });
  try {
    journals.sessions.event(null, 'journal_started', {
      journal_id: id,
      reason,
      by: 'operator',
      previous_anchor: previousState,
      previous: previous === null ? null : { journal_id: previous.journal_id, counter: previous.counter, activity: previous.activity, sessions: previous.sessions, vault_generation: previous.vault_generation },
      moved_to: movedTo,
    });
  } finally {
    journals.close();
    keeper.close();
  }
  return { journalId: id, movedTo, previous };
}

export type AnchorInspection =
  | { readonly anchor: 'none'; readonly journals: 'none' | 'present' }
  | { readonly anchor: 'malformed' }
  | { readonly anchor: 'forged'; readonly record: AnchorRecord }
  | {
      readonly anchor: 'authentic' | 'unchecked';
      readonly record: AnchorRecord;
      readonly verdict: AnchorVerdict;
    };

/**
 * The read-only judgement: never creates or writes anything. Without `key`
 * the MAC is not checked (`unchecked`) — the journals are compared with what
 * the anchor file claims; without `vaultGeneration` the vault is not judged.
 */
export function inspectAnchor(journalDir: string, anchorPath: string, key?: Uint8Array, vaultGeneration?: number): AnchorInspection {
  let stored: StoredAnchor | undefined;
  try {
    stored = readAnchor(anchorPath, key);
  } catch (e) {
    if (e instanceof PosternError && e.code === 'JOURNAL_ANCHOR_MISMATCH') return { anchor: 'malformed' };
    throw e;
  }
  const presence = journalPresence(journalDir);
  if (stored === undefined) return { anchor: 'none', journals: presence.kind === 'none' ? 'none' : 'present' };
  if (key !== undefined && !anchorIsAuthentic(key, stored)) return { anchor: 'forged', record: stored.record };
  const anchor = key === undefined ? 'unchecked' : 'authentic';
  if (presence.kind !== 'complete') {
    const problem: JournalProblem = presence.kind === 'problem' ? presence.problem : { kind: 'missing', journal: 'activity' };
    return { anchor, record: stored.record, verdict: { kind: 'journal_mismatch', problem } };
  }
  const j = openJournals(journalDir, { readonly: true });
  try {
    return { anchor, record: stored.record, verdict: judgeAnchor(stored.record, j.facts(), vaultGeneration) };
  } finally {
    j.close();
  }
}
