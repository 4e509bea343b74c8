/**
 * The watch on a journal file that this process owns (the daemon): nobody
 * else may write it while it is open, and it must stay the very file that was
 * opened (and checked against the anchor).
 *
 * Before each write, inside its transaction, and before each idempotency
 * lookup, `check` compares:
 * - the path's inode and device with those at open (deleted, replaced by
 *   another file or renamed away → changed), and refuses a file emptied to 0
 *   bytes;
 * - SQLite's `data_version`, which moves when another connection commits
 *   (another process writing rows, a restored copy written through SQLite);
 * - the chain head with the head of this process's last own commit.
 * The first difference poisons the watch: every later check fails with the
 * same JOURNAL_UNAVAILABLE, so no call runs over a journal that is no longer
 * the anchored one until the daemon is restarted (and checks the anchor).
 * A cost of a few microseconds per check: one stat(2) and two small reads
 * (prepared once). After a commit nothing is read: the new head is the one
 * the chain appended, and `data_version` does not move for this connection's
 * own commits (the check inside the transaction saw the value it keeps).
 */
import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import type { Chain } from './chain.js';
import type { JournalName } from './database.js';
import type { ChainHead } from './types.js';

interface Identity {
  readonly dev: number;
  readonly ino: number;
}

export class JournalWatch {
  readonly #identity: Identity;
  #dataVersion: number;
  #head: ChainHead;
  #poisoned: PosternError | null = null;
  readonly #dataVersionStmt: Database.Statement<[], number>;

  constructor(
    private readonly name: JournalName,
    private readonly path: string,
    db: Database.Database,
    private readonly chain: Chain,
  ) {
    const st = statSync(path);
    this.#identity = { dev: st.dev, ino: st.ino };
    this.#dataVersionStmt = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.#dataVersion = this.#readDataVersion();
    this.#head = chain.head();
  }

  /** Throws JOURNAL_UNAVAILABLE (and stays failed) when the file is no longer the one opened. */
  check(): void {
    if (this.#poisoned !== null) throw this.#poisoned;
    const problem = this.#problem();
    if (problem === undefined) return;
    this.#poisoned = new PosternError(
      'JOURNAL_UNAVAILABLE',
      `${this.name} journal: ${problem} while the daemon was running; nothing more is run until the daemon is restarted (which checks the journal against its anchor)`,
      { details: { journal: this.name, error: 'JOURNAL_CHANGED' } },
    );
    throw this.#poisoned;
  }

  /**
   * After this process's own commit, whose transaction ran `check`: the new
   * head (the one it appended, or the old one), which the next check expects.
   */
  committed(appended: ChainHead | null): ChainHead {
    if (appended !== null) this.#head = appended;
    return this.#head;
  }

  get head(): ChainHead {
    return this.#head;
  }

  #problem(): string | undefined {
    let st;
    try {
      st = statSync(this.path);
    } catch {
      return `${this.path} was removed`;
    }
    if (st.dev !== this.#identity.dev || st.ino !== this.#identity.ino) return `${this.path} was replaced by another file`;
    if (st.size === 0) return `${this.path} was emptied`;
    if (this.#readDataVersion() !== this.#dataVersion) return 'another process wrote to the journal';
    const head = this.chain.head();
    if (head.seq !== this.#head.seq || head.hash !== this.#head.hash) return 'the journal no longer ends where this daemon last wrote';
    return undefined;
  }

  #readDataVersion(): number {
    return this.#dataVersionStmt.get() as number;
  }
}
