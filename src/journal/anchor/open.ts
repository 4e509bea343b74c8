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
import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Clock } from '../../clock/index.js';
import type { ChainBase } from '../types.js';
import { PosternError } from '../../rules/errors.js';
import { GENESIS_HASH } from '../chain.js';
import type { GapRecord } from '../gap.js';
import { openJournals, type JournalFacts, type Journals, type OpenOptions } from '../index.js';
import { anchorFileText, anchorMismatch, readAnchor } from './file.js';
import { journalPresence, sizeOf } from '../presence.js';
import { AnchorKeeper } from './keeper.js';
import { readCheckpoints } from '../checkpoint/file.js';
import { checkpointRefusal, judgeCheckpointFile } from '../checkpoint/inspect.js';
import { CHECKPOINT_FORMAT, highestCounter, type CheckpointRecord } from '../checkpoint/record.js';
import { CheckpointSigner, publicKeyOf } from '../checkpoint/signature.js';
import { checkpointsLost, checkpointsShortOfVault } from '../checkpoint/vault-mark.js';
import { proveClaims, readVerified, sealClaims, verifiedPath, type ClaimsProof } from './verified.js';
import { ANCHOR_FORMAT, anchorIsAuthentic, judgeAgainstVault, judgeAnchor, sealAnchor, type AnchorRecord, type RecordedJournal, type AnchorVerdict, type JournalProblem, type StoredAnchor } from '../anchor-record.js';

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
function refuseUnvouched(ctx: AnchorContext, facts: JournalFacts | undefined): SignedPrune | null {
  if (ctx.checkpoints === undefined) return null;
  const inspection = judgeCheckpointFile(ctx.checkpoints.path, facts, { kind: 'missing', journal: 'activity' }, { vaultKey: publicKeyOf(ctx.checkpoints.seed) });
  const line = checkpointRefusal(inspection);
  if (line === null) {
    if (inspection.kind !== 'judged' || inspection.verdict.kind !== 'ok' || facts === undefined) return null;
    const c = inspection.checkpoint.record;
    // A prune is journaled right after its rows are gone; a signed prune with nothing journaled since was cut short.
    if (c.reason !== 'prune' || (inspection.verdict.unfinishedPrune === null && inspection.verdict.tail.sessions > 0)) return null;
    return { before: c.pruned_before, counter: c.counter, bases: { activity: c.bases.activity, sessions: c.bases.sessions } };
  }
  throw new PosternError(
    'JOURNAL_ANCHOR_MISMATCH',
    `the signed checkpoints do not vouch for this journal: ${line}; a completed idempotency key could run again on it, so the daemon will not start: restore the newest journal, or start a new one with \`postern anchor new-journal\``,
    { details: { reason: 'checkpoint_mismatch' } },
  );
}

/** A prune the last signed checkpoint records but the journal has not finished or not journaled (`audit prune` was killed after signing it). */
interface SignedPrune {
  readonly before: string | null;
  readonly counter: number;
  readonly bases: { readonly activity: ChainBase; readonly sessions: ChainBase };
}

/**
 * Finishes a signed prune whose rows are still there: the same cuts, refused
 * unless they leave exactly the signed bases; journaled as `audit prune`
 * journals its own, saying it was finished on opening.
 */
function finishSignedPrune(journals: Journals, p: SignedPrune): void {
  const bases = journals.prune({ activity: { cut: p.bases.activity.seq }, sessions: { cut: p.bases.sessions.seq } }, p.bases);
  journals.sessions.event(null, 'journal_pruned', {
    before: p.before,
    by: 'operator',
    finished: 'on opening the journals (the prune was interrupted after it was signed)',
    checkpoint_counter: p.counter,
    activity: { base_seq: bases.activity.seq },
    sessions: { base_seq: bases.sessions.seq },
  });
}

/** A counter no checkpoint carries yet: an anchor put back never makes the keeper sign a counter twice. */
function freshCounter(ctx: AnchorContext, counter: number): number {
  return ctx.checkpoints === undefined ? counter : Math.max(counter, highestCounter(readCheckpoints(ctx.checkpoints.path)));
}

function openWithKeeper(
  ctx: AnchorContext,
  record: AnchorRecord,
  opts: { journalId?: string; admit?: (f: JournalFacts, activityDb: Database.Database) => void; beforeAnchor?: (j: Journals) => void },
): Opened {
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
    opts.beforeAnchor?.(journals);
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
    return { journals, keeper, readBases: currentBases };
  } catch (e) {
    journals.close();
    throw e;
  }
}

/** The journals and their keeper; `readBases` reads the chains' bases for the checkpoints (they keep the last read once the journals are closed). */
interface Opened {
  readonly journals: Journals;
  readonly keeper: AnchorKeeper;
  readonly readBases: () => unknown;
}

function handle({ journals, keeper, readBases }: Opened, found: AnchoredJournals['found'], ctx: AnchorContext, proved: number): AnchoredJournals {
  // A copy: the vault's own key array is zeroed when the vault locks, and the seal is written at close.
  const sealKey = Uint8Array.from(ctx.key);
  const seal = (): number => {
    const at = ctx.clock.now().toISOString();
    const f = journals.facts().activity;
    return sealClaims(journals.activityDb, verifiedPath(ctx.journalDir), sealKey, { journal_id: f.journal_id ?? '', head: f.head, base: f.base }, proved, at) ?? proved;
  };
  try {
    proved = seal();
  } catch (e) {
    ctx.log(`the idempotency claims' verified point could not be written (${e instanceof Error ? e.message : 'error'}): the next start proves them from the last one`);
  }
  return {
    journals,
    keeper,
    found,
    close() {
      try {
        // Only over entries this process wrote itself: not when another process changed the journals.
        journals.checkOwned();
        seal();
      } catch (e) {
        ctx.log(`the idempotency claims were not sealed at close (${e instanceof Error ? e.message : 'error'}): the next start proves them from the last verified point`);
      }
      sealKey.fill(0);
      // The final checkpoint is signed after the journals are closed: it signs the bases as they are now (a prune may have moved them).
      readBases();
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
    const opened = openWithKeeper(ctx, firstRecord(id, ctx, 0), { journalId: id });
    opened.journals.sessions.event(null, 'journal_started', { journal_id: id, reason: 'new home', previous: null });
    return handle(opened, { kind: 'new' }, ctx, 0);
  }
  if (presence.kind === 'none') throw anchorMismatch({ kind: 'missing', journal: 'activity' });
  if (presence.kind === 'problem') throw anchorMismatch(presence.problem);
  let verdict: AnchorVerdict | undefined;
  let signedPrune: SignedPrune | null = null;
  let proof: ClaimsProof | undefined;
  const anchor = stored.record;
  const opened = openWithKeeper(ctx, anchor, {
    admit: (facts, activityDb) => {
      verdict = judgeAnchor(anchor, facts, ctx.vaultGeneration);
      if (verdict.kind === 'journal_mismatch') throw anchorMismatch(verdict.problem);
      if (verdict.kind === 'vault_rolled_back' && opts.acceptVault !== true) throw vaultRolledBack(verdict.anchored, verdict.found);
      // An older vault carries an older record of the journal: only a vault not behind the anchor is compared.
      if (verdict.kind === 'ok') {
        const behind = judgeAgainstVault(anchor, ctx.vaultJournal);
        if (behind !== null) throw anchorMismatch(behind);
      }
      // Checkpoints deleted, emptied or cut back read as "none yet" to the judgement below: the vault's record says how far they went.
      const short = ctx.checkpoints === undefined ? null : checkpointsShortOfVault(ctx.checkpoints.path, ctx.vaultJournal?.checkpoints);
      if (short !== null) throw checkpointsLost(short);
      signedPrune = refuseUnvouched(ctx, facts);
      // The idempotency claims are not chained: proved against the chain before recovery writes anything.
      const a = facts.activity;
      proof = proveClaims(activityDb, { journal_id: a.journal_id ?? '', head: a.head, base: a.base }, readVerified(verifiedPath(ctx.journalDir), ctx.key));
    },
    // Before the start's checkpoint signs the bases as they are.
    beforeAnchor: (j) => {
      if (signedPrune !== null) finishSignedPrune(j, signedPrune);
    },
  });
  const { journals, keeper } = opened;
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
  return handle(opened, { kind: 'anchored', tail, vaultAccepted }, ctx, proof?.from ?? 0);
}

/**
 * `postern anchor new-journal`, prepared: the new journal (a new id, its
 * `journal_started` entry recording the replacement and what the old anchor
 * said) is built beside the home in `journal.staged-<id>`, where nothing
 * reads it; nothing in the home changes here. The caller then commits one
 * home change (change-record.ts): the old directory moved aside (kept, as
 * `journal.replaced-<time>`), the staged one moved into place, its anchor and
 * first signed checkpoint (`seal`, for the vault generation that change
 * saves), and the vault's record of the new journal. A kill before that
 * change leaves the home as it was (a staged directory no one reads); after
 * it, the new journal. The caller holds the daemon lock.
 */
export interface NewJournalPlan {
  readonly journalId: string;
  /** Where the new journal was built (inside the home's parent of the journal directory). */
  readonly stagedDir: string;
  /** Where the old journal directory goes; null when there is none. */
  readonly movedTo: string | null;
  readonly previous: AnchorRecord | null;
  /** The new journal's heads: what its anchor, its checkpoint and the vault record. */
  readonly mark: RecordedJournal;
  /** The anchor file's text and the signed checkpoint line for the new journal, at vault generation `generation`. */
  seal(generation: number): { readonly anchor: string; readonly checkpoint: string | null };
}

/** The anchor as found (authentic, or why not), where the current journal would be moved aside, and a fresh staging directory. */
export function replacementSite(ctx: AnchorContext): { previous: AnchorRecord | null; previousState: string; at: string; movedTo: string | null; stagedDir: string } {
  let previous: AnchorRecord | null = null;
  let previousState: string;
  try {
    previous = authenticAnchor(ctx)?.record ?? null;
    previousState = previous === null ? 'none' : 'authentic';
  } catch (e) {
    if (!(e instanceof PosternError) || e.code !== 'JOURNAL_ANCHOR_MISMATCH') throw e;
    previousState = String(e.details['reason']);
  }
  const at = ctx.clock.now().toISOString();
  const movedTo = sizeOf(ctx.journalDir) === undefined ? null : join(dirname(ctx.journalDir), `journal.replaced-${at.replace(/[:.]/g, '-')}`);
  const stagedDir = join(dirname(ctx.journalDir), `journal.staged-${randomUUID()}`);
  return { previous, previousState, at, movedTo, stagedDir };
}

/** `carry`: the gap earlier restores left (journal/gap.ts), held on in the new journal. */
export function prepareNewJournal(ctx: AnchorContext, reason: string, carry: GapRecord | null = null): NewJournalPlan {
  const { previous, previousState, at, movedTo, stagedDir } = replacementSite(ctx);
  const id = randomUUID();
  mkdirSync(stagedDir, { recursive: true, mode: 0o700 });
  const journals = openJournals(stagedDir, { clock: ctx.clock, journalId: id });
  let facts: JournalFacts;
  try {
    journals.sessions.event(null, 'journal_started', {
      journal_id: id,
      reason,
      by: 'operator',
      previous_anchor: previousState,
      previous: previous === null ? null : { journal_id: previous.journal_id, counter: previous.counter, activity: previous.activity, sessions: previous.sessions, vault_generation: previous.vault_generation },
      moved_to: movedTo,
      ...(carry === null ? {} : { gap: carry }),
    });
    facts = journals.facts();
  } finally {
    journals.close();
  }
  return stagedPlan(ctx, { journalId: id, stagedDir, movedTo, previous, at, facts });
}

/** A counter no anchor or checkpoint of this home carries yet, past `counter`. */
function nextCounter(ctx: AnchorContext, counter: number): number {
  return freshCounter(ctx, counter) + 1;
}

/** The plan of a journal built in `stagedDir` (its facts as built): what its anchor, checkpoint and the vault's record say. */
export function stagedPlan(
  ctx: AnchorContext,
  s: { readonly journalId: string; readonly stagedDir: string; readonly movedTo: string | null; readonly previous: AnchorRecord | null; readonly at: string; readonly facts: JournalFacts },
): NewJournalPlan {
  const { journalId: id, facts, at } = s;
  const counter = nextCounter(ctx, s.previous?.counter ?? 0);
  const record = (generation: number): AnchorRecord => ({
    ...firstRecord(id, ctx, counter),
    activity: facts.activity.head,
    sessions: facts.sessions.head,
    vault_generation: generation,
    at,
  });
  return {
    journalId: id,
    stagedDir: s.stagedDir,
    movedTo: s.movedTo,
    previous: s.previous,
    mark: { id, activity: facts.activity.head, sessions: facts.sessions.head },
    seal(generation) {
      const r = record(generation);
      const anchor = anchorFileText(sealAnchor(ctx.key, r));
      if (ctx.checkpoints === undefined) return { anchor, checkpoint: null };
      const signer = new CheckpointSigner(ctx.checkpoints.seed);
      try {
        const c: CheckpointRecord = {
          format: CHECKPOINT_FORMAT,
          reason: 'operator',
          journal_id: id,
          counter: r.counter,
          activity: r.activity,
          sessions: r.sessions,
          bases: { activity: facts.activity.base, sessions: facts.sessions.base },
          vault_generation: r.vault_generation,
          catalog_digest: r.catalog_digest,
          at: r.at,
          public_key: signer.publicKey,
          pruned_before: null,
          next_public_key: null,
        };
        return { anchor, checkpoint: JSON.stringify({ record: c, signature: signer.sign(c) }) };
      } finally {
        signer.close();
      }
    },
  };
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
