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
 *   never adopted automatically (record.ts).
 */
import type { Clock } from '../../clock/index.js';
import type { JournalName } from '../database.js';
import type { ChainHead } from '../types.js';
import { writeAnchor } from './file.js';
import { sealAnchor, type AnchorRecord } from './record.js';

/** How long a non-intent commit may stay unanchored. */
export const ANCHOR_LAG_MS = 200;

export interface KeeperOptions {
  readonly path: string;
  /** The journal-anchor key (copied; zeroed by close). */
  readonly key: Uint8Array;
  /** What the next write starts from: the journal id, the last counter, and the current heads. */
  readonly record: AnchorRecord;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly lagMs?: number;
}

export class AnchorKeeper {
  readonly #path: string;
  readonly #key: Uint8Array;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  readonly #lagMs: number;
  #record: AnchorRecord;
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(o: KeeperOptions) {
    this.#path = o.path;
    this.#key = Uint8Array.from(o.key);
    this.#clock = o.clock;
    this.#log = o.log;
    this.#lagMs = o.lagMs ?? ANCHOR_LAG_MS;
    this.#record = o.record;
  }

  get record(): AnchorRecord {
    return this.#record;
  }

  /** The journals' commit listener. Throws (JOURNAL_UNAVAILABLE) only when a durable write fails. */
  readonly onCommit = (journal: JournalName, head: ChainHead, durable: boolean): void => {
    const prev = this.#record[journal];
    if (prev.seq !== head.seq || prev.hash !== head.hash) {
      this.#record = { ...this.#record, [journal]: head };
      this.#dirty = true;
    }
    if (durable) this.flush();
    else this.#schedule();
  };

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
    this.#schedule();
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

  /** Writes now even if nothing changed (a fresh counter and time: start, operator commands), rename included. */
  writeNow(): void {
    this.#dirty = true;
    this.flush(true);
  }

  /** Final write (rename included), then the key is zeroed. */
  close(): void {
    try {
      this.#dirty = true;
      this.flush(true);
    } finally {
      this.#closed = true;
      this.#key.fill(0);
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
    const next: AnchorRecord = { ...this.#record, counter: this.#record.counter + 1, at: this.#clock.now().toISOString() };
    writeAnchor(this.#path, sealAnchor(this.#key, next), whole);
    this.#record = next;
    this.#dirty = false;
  }
}
