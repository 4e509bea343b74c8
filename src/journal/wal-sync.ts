/**
 * Group fsync of a journal's write-ahead log, off the event loop.
 *
 * A group-committed write (activity.ts `recordIntentsAsync` /
 * `recordOutcomesAsync`) commits its transaction with synchronous=NORMAL —
 * SQLite then writes the WAL frames but does not fsync them — and awaits
 * `sync()` here before it tells anyone the entries exist. That is the one
 * fsync synchronous=FULL would have made inside the commit, made instead in
 * the thread pool, so the loop keeps serving other calls meanwhile, and every
 * commit made while one fsync runs shares the next one.
 *
 * Invariants:
 * - `sync()` resolves only after an fsync of the WAL that *began after the
 *   call* has completed: everything committed before the call is then on
 *   disk (one fsync flushes every frame written to the file before it);
 * - fsyncs run one at a time; callers that arrive while one runs wait for the
 *   next, which starts as soon as the running one ends (so at most two
 *   fsyncs stand between a commit and its durability);
 * - a failed fsync rejects every caller it was meant for (JOURNAL_UNAVAILABLE
 *   from the caller's `journalError`): nothing is called durable that was
 *   not, and the next `sync()` tries again;
 * - the file descriptor is opened once — when the journal is opened (SQLite
 *   has made the WAL by then), else on the first sync — so it is the very
 *   file SQLite writes while the connection is open; `close()` closes it.
 */
import { closeSync, fsync, openSync, constants } from 'node:fs';

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

export class WalSync {
  readonly #path: string;
  #fd: number | null = null;
  #running = false;
  #next: Waiter[] = [];
  /** fsyncs completed (for tests and the benchmark). */
  syncs = 0;

  constructor(walPath: string) {
    this.#path = walPath;
  }

  /** Opens the WAL now if it exists (the journal's open calls this once SQLite has made it). */
  open(): void {
    try {
      this.#fd ??= openSync(this.#path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch {
      // opened on the first sync instead (or that sync fails)
    }
  }

  sync(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#next.push({ resolve, reject });
      if (!this.#running) this.#start();
    });
  }

  close(): void {
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  #start(): void {
    const batch = this.#next;
    this.#next = [];
    let fd: number;
    try {
      fd = this.#fd ??= openSync(this.#path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      for (const w of batch) w.reject(e);
      return;
    }
    this.#running = true;
    fsync(fd, (err) => {
      this.#running = false;
      if (err === null) this.syncs++;
      for (const w of batch) {
        if (err === null) w.resolve();
        else w.reject(err);
      }
      if (this.#next.length > 0) this.#start();
    });
  }
}
