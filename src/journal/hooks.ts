/**
 * What a journal's owner may attach to its writes: a check inside each write
 * transaction (and before each idempotency lookup) that the file is still the
 * one it opened, and a note after each commit with the new chain head — the
 * anchor advances from it (the head the transaction appended, as the chain
 * reports it: null when it appended nothing, so the head did not move). `durable` commits (intents) return only once the
 * owner has made the new head durable; a throwing `committed` then means the
 * entry is in the journal but not anchored.
 */
import type { JournalName } from './database.js';
import type { ChainHead } from './types.js';

export interface CommitHooks {
  /** Throws to refuse the write or the read (JOURNAL_UNAVAILABLE). */
  check(): void;
  /** After a commit (or a write transaction that appended nothing: `appended` null). */
  committed(durable: boolean, appended: ChainHead | null): void;
}

export const NO_HOOKS: CommitHooks = Object.freeze({ check: () => undefined, committed: () => undefined });

/** Told of every commit of both journals, with the new head. */
export type CommitListener = (journal: JournalName, head: ChainHead, durable: boolean) => void;
