/**
 * What a journal's owner may attach to its writes: a check inside each write
 * transaction (and before each idempotency lookup) that the file is still the
 * one it opened, and a note after each commit with the new chain head — the
 * anchor advances from it (the head the transaction appended, as the chain
 * reports it: null when it appended nothing, so the head did not move). `durable` commits (intents) return only once the
 * owner has made the new head durable; a throwing `committed` then means the
 * entry is in the journal but not anchored.
 *
 * A commit whose fsync is deferred (wal-sync.ts) is told in two steps:
 * `followed` right after the commit (the file watch expects the new head at
 * once), `synced` once the WAL is on disk (only then may the anchor name it:
 * an anchor ahead of what a crash keeps would look like a rollback).
 * `committed(d, a)` is the two at once. `anchored` is `synced` of a durable
 * commit made off the event loop: it resolves once the owner has made the
 * head durable (the anchor's own write runs in the thread pool).
 */
import type { JournalName } from './database.js';
import type { ChainHead } from './types.js';

export interface CommitHooks {
  /** Throws to refuse the write or the read (JOURNAL_UNAVAILABLE). */
  check(): void;
  /** After a commit (or a write transaction that appended nothing: `appended` null). */
  committed(durable: boolean, appended: ChainHead | null): void;
  /** After a commit whose fsync is still to come: returns the new head. */
  followed(appended: ChainHead | null): ChainHead;
  /** The WAL holding `head` is on disk. */
  synced(head: ChainHead, durable: boolean): void;
  /** The WAL holding `head` of a durable commit is on disk: resolves once the owner made the head durable; rejects when it could not. */
  anchored(head: ChainHead): Promise<void>;
}

const NO_HEAD: ChainHead = Object.freeze({ seq: 0, hash: '' });
export const NO_HOOKS: CommitHooks = Object.freeze({ check: () => undefined, committed: () => undefined, followed: () => NO_HEAD, synced: () => undefined, anchored: () => Promise.resolve() });

/** Told of every commit of both journals, with the new head. */
export type CommitListener = (journal: JournalName, head: ChainHead, durable: boolean) => void;

/** Told of a durable commit made off the event loop; resolves once its head is durable. */
export type DurableCommitListener = (journal: JournalName, head: ChainHead) => Promise<void>;
