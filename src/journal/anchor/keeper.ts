/**
 * The running anchor: advanced with the journals' commits, written with a new
 * counter each time, sealed under the vault's journal-anchor key.
 *
 * When it is written, and why that is enough:
 * - **a keyed intent is anchored before it returns** (its slot rewritten in
 *   place and flushed: file.ts says why one fdatasync is enough), so before
 *   anything leaves the machine the anchor covers the intent and its
 *   idempotency claim. Every call with effects carries a key. A journal rolled
 *   back to before a key's intent is then always behind its anchor — refused
 *   at start. Rolled back to after the intent, the call shows no outcome and
 *   recovery makes it outcome_unknown: never run again either way.
 * - **every other commit** (keyless intents — reads —, outcomes, rejections,
 *   replays, session events) lets the anchor lag by at most `lagMs`: losing
 *   one of those entries loses a record, never a guard against a second run
 *   (a lost outcome turns into outcome_unknown). That halves the fsyncs per call.
 * - so after a crash between a commit and the next anchor write, the journal
 *   may hold an **unanchored tail**: entries past the anchored head whose chain
 *   continues from it. No keyed intent in it ever ran (it would have been
 *   anchored first); a keyless one may have, and recovery shows it
 *   outcome_unknown. So the tail is adopted at start and the adoption journaled.
 * - a journal behind the anchor, or with another hash at the anchored seq, is
 *   never adopted automatically (../anchor-record.ts).
 *
 * Signed checkpoints (checkpoint/record.ts), when the keeper has the signing
 * seed: right after an anchor write, the same record (plus the chains' bases
 * and the public key) is signed and appended to the checkpoint file — at the
 * start (`writeNow`), at a clean stop or lock (`close`), after a catalog is
 * adopted (`noteCatalog`), on operator commands (`checkpointNow`), and
 * periodically: at the first anchor write once CHECKPOINT_INTERVAL_MS
 * (monotonic) have passed or CHECKPOINT_EVERY_ENTRIES entries were committed
 * since the last one. A failed checkpoint write is logged, never fails a call:
 * the anchor is the guard, checkpoints are the proof for others.
 */
import type { Clock } from '../../clock/index.js';
import { appendCheckpoint } from '../checkpoint/file.js';
import { CHECKPOINT_FORMAT, type CheckpointReason, type CheckpointRecord, type StoredCheckpoint } from '../checkpoint/record.js';
import { CheckpointSigner } from '../checkpoint/signature.js';
import type { JournalName } from '../database.js';
import type { ChainBase, ChainHead } from '../types.js';
import { writeAnchor, writeAnchorAsync } from './file.js';
import { sealAnchor, type AnchorRecord } from '../anchor-record.js';

/** How long a non-intent commit may stay unanchored. */
export const ANCHOR_LAG_MS = 200;
/** A periodic checkpoint is due after this long (monotonic) ... */
const CHECKPOINT_INTERVAL_MS = 10 * 60_000;
/** ... or after this many entries (both journals) since the last one: a bundle's chain segment is at most about this long. */
const CHECKPOINT_EVERY_ENTRIES = 1000;

export interface CheckpointOptions {
  readonly path: string;
  /** The vault's journal-checkpoint key: the Ed25519 seed (not kept; the key pair is zeroed by close). */
  readonly seed: Uint8Array;
  /** Where each chain starts now. */
  readonly bases: () => { readonly activity: ChainBase; readonly sessions: ChainBase };
  readonly intervalMs?: number;
  readonly everyEntries?: number;
}

interface KeeperOptions {
  readonly path: string;
  /** The journal-anchor key (copied; zeroed by close). */
  readonly key: Uint8Array;
  /** What the next write starts from: the journal id, the last counter, and the current heads. */
  readonly record: AnchorRecord;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly lagMs?: number;
  /** Sign checkpoints (the daemon and the operator commands); none without it. */
  readonly checkpoints?: CheckpointOptions;
}

interface CheckpointState {
  readonly o: CheckpointOptions;
  readonly signer: CheckpointSigner;
  pending: { reason: CheckpointReason; prunedBefore: string | null; bases?: { readonly activity: ChainBase; readonly sessions: ChainBase } } | null;
  last: { mono: number; entries: number } | null;
}

export class AnchorKeeper {
  readonly #path: string;
  readonly #key: Uint8Array;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  readonly #lagMs: number;
  #record: AnchorRecord;
  /** The last record an anchor write made durable: what the vault may record (it must never lead the file). */
  #written: AnchorRecord;
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #cp: CheckpointState | null;
  /** The highest counter a write has taken: every write has its own, so two never share a slot's counter. */
  #counter: number;
  /** The anchor write running off the loop, and the one queued after it (for commits that came meanwhile). */
  #running: Promise<void> | null = null;
  #queued: Promise<void> | null = null;

  constructor(o: KeeperOptions) {
    this.#path = o.path;
    this.#key = Uint8Array.from(o.key);
    this.#clock = o.clock;
    this.#log = o.log;
    this.#lagMs = o.lagMs ?? ANCHOR_LAG_MS;
    this.#record = o.record;
    this.#written = o.record;
    this.#counter = o.record.counter;
    this.#cp = o.checkpoints === undefined ? null : { o: o.checkpoints, signer: new CheckpointSigner(o.checkpoints.seed), pending: null, last: null };
  }

  get record(): AnchorRecord {
    return this.#record;
  }

  /** The last record written to the anchor file (heads noted since may still be on their way). */
  get written(): AnchorRecord {
    return this.#written;
  }

  /** The checkpoint public key (hex), or null when this keeper signs none. */
  get checkpointKey(): string | null {
    return this.#cp?.signer.publicKey ?? null;
  }

  /** The journals' commit listener. Throws (JOURNAL_UNAVAILABLE) only when a durable write fails. */
  readonly onCommit = (journal: JournalName, head: ChainHead, durable: boolean): void => {
    this.#note(journal, head);
    if (durable) this.flush();
    else this.#schedule();
  };

  /** A new head of `journal`; a group commit is told once its fsync is done, possibly after a later commit was: never step back. */
  #note(journal: JournalName, head: ChainHead): void {
    const prev = this.#record[journal];
    if (head.seq >= prev.seq && (prev.seq !== head.seq || prev.hash !== head.hash)) {
      this.#record = { ...this.#record, [journal]: head };
      this.#dirty = true;
    }
  }

  /**
   * The commit listener for a durable commit made off the event loop (a
   * group-committed keyed intent): resolves once an anchor write that began
   * after this head was noted is durable. Writes run one at a time in the
   * thread pool; every commit that arrives while one runs shares the next.
   * Rejects (JOURNAL_UNAVAILABLE) when that write fails.
   */
  readonly onDurableCommit = (journal: JournalName, head: ChainHead): Promise<void> => {
    this.#note(journal, head);
    return this.#flushAsync();
  };

  #flushAsync(): Promise<void> {
    if (this.#running === null) {
      const run = this.#writeAsync().finally(() => {
        if (this.#running === run) this.#running = null;
      });
      this.#running = run;
      return run;
    }
    // The running write may have sealed its record before this head was noted: one more after it.
    this.#queued ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#queued = null;
        return this.#flushAsync();
      });
    return this.#queued;
  }

  async #writeAsync(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (!this.#dirty || this.#closed) return;
    const next = this.#next();
    this.#dirty = false;
    try {
      await writeAnchorAsync(this.#path, sealAnchor(this.#key, next));
    } catch (e) {
      this.#dirty = true;
      throw e;
    }
    this.#wrote(next);
  }

  /** The record the next write seals: the heads as they are now, a counter of its own, the time. */
  #next(): AnchorRecord {
    this.#counter += 1;
    return { ...this.#record, counter: this.#counter, at: this.#clock.now().toISOString() };
  }

  /** After a write of `next`: heads noted meanwhile stay (they are newer), the counter and time are the write's. */
  #wrote(next: AnchorRecord): void {
    if (next.counter >= this.#record.counter) this.#record = { ...this.#record, counter: next.counter, at: next.at };
    if (next.counter >= this.#written.counter) this.#written = next;
    // A write that ends after close (or a lock) is durable, but the signer is gone: close signed the last word.
    if (!this.#closed) this.#checkpoint(next);
  }

  /** Records a vault generation in force; the anchor keeps the highest seen. */
  noteVaultGeneration(generation: number): void {
    if (generation <= this.#record.vault_generation) return;
    this.#record = { ...this.#record, vault_generation: generation };
    this.#dirty = true;
    this.#schedule();
  }

  /** The operator accepted an older vault (`postern anchor accept-vault`): the anchor records it. */
  acceptVaultGeneration(generation: number): void {
    this.#record = { ...this.#record, vault_generation: generation };
    this.#dirty = true;
  }

  noteCatalog(digest: string): void {
    if (digest === this.#record.catalog_digest) return;
    this.#record = { ...this.#record, catalog_digest: digest };
    this.#dirty = true;
    this.#want('catalog');
    this.#schedule();
  }

  /**
   * An anchor write now, and a checkpoint of it (`prune` records the cut-off,
   * and `bases` the chains' bases the prune will leave: the signed prune is
   * the commit point of `audit prune`, finished by the next open if the
   * process dies before its rows are gone). Throws when the anchor cannot be written.
   */
  checkpointNow(reason: CheckpointReason, prunedBefore: string | null = null, bases?: { readonly activity: ChainBase; readonly sessions: ChainBase }): void {
    this.#want(reason, prunedBefore, bases);
    this.#dirty = true;
    this.flush(true);
  }

  /** Writes now if anything changed since the last write; throws on failure. `whole`: replace the whole file (both slots, directory synced). */
  flush(whole = false): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (!this.#dirty || this.#closed) return;
    this.#write(whole);
  }

  /** Writes now even if nothing changed (a fresh counter and time: start, operator commands), rename included; checkpointed. */
  writeNow(): void {
    this.#want(this.#cp?.last === null ? 'start' : 'operator');
    this.#dirty = true;
    this.flush(true);
  }

  /** Final write (rename included) and checkpoint, then the keys are zeroed. */
  close(): void {
    try {
      // A checkpoint unless the last one already says all of it (e.g. right after an operator command's own).
      const cp = this.#cp;
      if (cp !== null && (cp.pending !== null || cp.last === null || cp.last.entries !== this.#entries())) this.#want('shutdown');
      this.#dirty = true;
      this.flush(true);
    } finally {
      this.#closed = true;
      this.#key.fill(0);
      this.#cp?.signer.close();
    }
  }

  #want(reason: CheckpointReason, prunedBefore: string | null = null, bases?: { readonly activity: ChainBase; readonly sessions: ChainBase }): void {
    if (this.#cp === null) return;
    // A prune's record is never replaced by a lesser reason before it is written.
    if (this.#cp.pending?.reason === 'prune' && reason !== 'prune') return;
    this.#cp.pending = { reason, prunedBefore, ...(bases === undefined ? {} : { bases }) };
  }

  #entries(): number {
    return this.#record.activity.seq + this.#record.sessions.seq;
  }

  /** After an anchor write of `r`: the checkpoint asked for, or a periodic one when due (it signs exactly what was anchored). */
  #checkpoint(r: AnchorRecord): void {
    const cp = this.#cp;
    if (cp === null) return;
    const mono = this.#clock.monotonicMs();
    let want = cp.pending;
    if (want === null && cp.last !== null) {
      const moved = r.activity.seq + r.sessions.seq - cp.last.entries;
      const due = moved >= (cp.o.everyEntries ?? CHECKPOINT_EVERY_ENTRIES) || (moved > 0 && mono - cp.last.mono >= (cp.o.intervalMs ?? CHECKPOINT_INTERVAL_MS));
      if (due) want = { reason: 'periodic', prunedBefore: null };
    }
    if (want === null) return;
    cp.pending = null;
    const record: CheckpointRecord = {
      format: CHECKPOINT_FORMAT,
      reason: want.reason,
      journal_id: r.journal_id,
      counter: r.counter,
      activity: r.activity,
      sessions: r.sessions,
      bases: want.bases ?? cp.o.bases(),
      vault_generation: r.vault_generation,
      catalog_digest: r.catalog_digest,
      at: r.at,
      public_key: cp.signer.publicKey,
      pruned_before: want.prunedBefore,
      next_public_key: null,
    };
    const stored: StoredCheckpoint = { record, signature: cp.signer.sign(record) };
    try {
      appendCheckpoint(cp.o.path, stored);
      cp.last = { mono, entries: r.activity.seq + r.sessions.seq };
    } catch (e) {
      this.#log(`journal checkpoint: ${e instanceof Error ? e.message : 'write failed'}`);
    }
  }

  #schedule(): void {
    if (!this.#dirty || this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      try {
        if (this.#dirty && !this.#closed) this.#write(false);
      } catch (e) {
        // The next intent's durable write retries; until then the tail is merely unanchored.
        this.#log(`journal anchor: ${e instanceof Error ? e.message : 'write failed'}`);
      }
    }, this.#lagMs);
    this.#timer.unref();
  }

  #write(whole: boolean): void {
    const next = this.#next();
    writeAnchor(this.#path, sealAnchor(this.#key, next), whole);
    this.#dirty = false;
    this.#wrote(next);
  }
}
