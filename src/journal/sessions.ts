/**
 * The sessions journal (`sessions.db`): one chained entry per agent session
 * start, per session event (tool lists served, list_changed sent, grants,
 * lock/unlock, catalog acceptance, close) and per daemon start/stop.
 *
 * Invariants:
 * - every write is one BEGIN IMMEDIATE transaction, committed (WAL fsync)
 *   before the method returns; any failure throws JOURNAL_UNAVAILABLE and
 *   leaves nothing behind;
 * - entries are append-only (triggers refuse UPDATE/DELETE) and hash-chained;
 * - a session id is started at most once (INTERNAL otherwise);
 * - values are stored as given: the caller redacts secrets first.
 */
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import { Chain, damageAware } from './chain.js';
import type { Cell, EntryRow } from './chain.js';
import { guard } from './database.js';
import { NO_HOOKS, type CommitHooks } from './hooks.js';
import type { SchemaSpec } from './database.js';
import { clampLimit, isoBound, MAX_LIMIT } from './filters.js';
import { toJsonText } from './json.js';
import { SESSION_EVENT_TYPES } from './types.js';
import type { ChainHead, ChainReport, SessionEventRow, SessionEventType, SessionRow, SessionStart } from './types.js';

export const SESSIONS_SCHEMA: SchemaSpec = {
  name: 'sessions',
  file: 'sessions.db',
  applicationId: 0x50535331, // 'PSS1'
  version: 2, // 2: the `meta` table with the journal id (database.ts)
  ddl: `
    CREATE TABLE entries (
      seq INTEGER PRIMARY KEY,
      at TEXT NOT NULL,
      session_id TEXT,
      type TEXT NOT NULL,
      body TEXT NOT NULL,
      prev_hash TEXT NOT NULL,
      hash TEXT NOT NULL
    ) STRICT;
    CREATE UNIQUE INDEX entries_session_started ON entries(session_id) WHERE type = 'session_started';
    CREATE INDEX entries_started_at ON entries(at) WHERE type = 'session_started';
    CREATE INDEX entries_session_closed ON entries(session_id, seq) WHERE type = 'session_closed';
    CREATE INDEX entries_by_session ON entries(session_id, seq);
    CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;
    CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;
  `,
};

export const SESSIONS_CONTENT_COLUMNS = ['seq', 'at', 'session_id', 'type', 'body'] as const;

export interface SessionsJournal {
  startSession(s: SessionStart): void;
  event(session_id: string | null, type: SessionEventType, data: Record<string, unknown>): void;
  /** The daemon-wide events of these types, oldest first (a scan: for the daemon's start). */
  daemonEvents(types: readonly SessionEventType[]): SessionEventRow[];
  endSession(session_id: string, reason: string): void;
  /** Newest first; `since` is an inclusive ISO lower bound on the start time. */
  listSessions(filter?: { since?: string; limit?: number }): SessionRow[];
  /** A session's entries in order (its start, its events, its close); `null` → daemon-wide events. */
  events(session_id: string | null, opts?: { limit?: number }): SessionEventRow[];
  /** The same, only entries journaled strictly between two sequence numbers (a session's start and close). */
  eventsBetween(session_id: string | null, afterSeq: number, beforeSeq: number, opts?: { limit?: number }): SessionEventRow[];
  /** The newest entry of `type` (of one session, or daemon-wide for `null`); undefined when there is none. */
  latestEvent(session_id: string | null, type: SessionEventType): SessionEventRow | undefined;
  /** The chain walked (chain.ts; `skips`: a shipped copy's accepted gaps). */
  verify(skips?: ReadonlyMap<number, ChainHead>): ChainReport;
  exportJsonl(write: (line: string) => void): void;
}

/** A session's start entry with the first close and identity entries of that session (listSessions's row). */
interface StartedRow {
  seq: number;
  at: string;
  body: string;
  ended_at: string | null;
  end_body: string | null;
  identity_body: string | null;
}

/** The start's run id and agent release, else the ones its first `session_identified` entry declared. */
function withIdentity(start: SessionStart, identityBody: string | null): SessionStart {
  if (identityBody === null || (start.run_id !== null && start.agent_release !== null)) return start;
  const id = JSON.parse(identityBody) as { run_id?: unknown; agent_release?: unknown };
  return {
    ...start,
    run_id: start.run_id ?? (typeof id.run_id === 'string' ? id.run_id : null),
    agent_release: start.agent_release ?? (typeof id.agent_release === 'string' ? id.agent_release : null),
  };
}

/** A sessions-journal entry as the audit shows it. */
export function toEventRow(r: EntryRow): SessionEventRow {
  return {
    seq: r.seq,
    at: String(r['at']),
    session_id: r['session_id'] === null ? null : String(r['session_id']),
    type: String(r['type']) as SessionEventRow['type'],
    data: JSON.parse(String(r['body'])) as Record<string, unknown>,
  };
}

/** One row of listSessions. */
export function toSessionRow(r: StartedRow): SessionRow {
  const end = r.end_body === null ? null : (JSON.parse(r.end_body) as { reason?: unknown });
  return {
    ...withIdentity(JSON.parse(r.body) as SessionStart, r.identity_body),
    seq: r.seq,
    started_at: r.at,
    ended_at: r.ended_at,
    end_reason: typeof end?.reason === 'string' ? end.reason : null,
  };
}

const LIST_SQL = `
    SELECT s.seq, s.at, s.body, c.at AS ended_at, c.body AS end_body, i.body AS identity_body
    FROM entries s
    LEFT JOIN entries c ON c.seq = (
      SELECT min(seq) FROM entries WHERE type = 'session_closed' AND session_id = s.session_id)
    LEFT JOIN entries i ON i.seq = (
      SELECT min(seq) FROM entries WHERE type = 'session_identified' AND session_id = s.session_id)
    WHERE s.type = 'session_started' AND s.at >= ?
    ORDER BY s.at DESC, s.seq DESC LIMIT ?`;

/** The sessions journal over its database: each write one chained entry in its own transaction. */
class SessionsJournalOnDb implements SessionsJournal {
  readonly #db: Database.Database;
  readonly #now: () => Date;
  readonly #chain: Chain;
  readonly #hooks: CommitHooks;
  readonly #startedStmt: Database.Statement<[string], { seq: number }>;
  readonly #listStmt: Database.Statement<[string, number], StartedRow>;
  readonly #eventsStmt: Database.Statement<[string | null, number], EntryRow>;
  readonly #betweenStmt: Database.Statement<[string | null, number, number, number], EntryRow>;
  readonly #latestStmt: Database.Statement<[string | null, string], EntryRow>;

  constructor(db: Database.Database, now: () => Date, chain: Chain, hooks: CommitHooks) {
    this.#db = db;
    this.#now = now;
    this.#chain = chain;
    this.#hooks = hooks;
    this.#startedStmt = db.prepare<[string], { seq: number }>(`SELECT seq FROM entries WHERE type = 'session_started' AND session_id = ?`);
    this.#listStmt = db.prepare<[string, number], StartedRow>(LIST_SQL);
    this.#eventsStmt = db.prepare<[string | null, number], EntryRow>('SELECT * FROM entries WHERE session_id IS ? ORDER BY seq LIMIT ?');
    this.#betweenStmt = db.prepare<[string | null, number, number, number], EntryRow>('SELECT * FROM entries WHERE session_id IS ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?');
    this.#latestStmt = db.prepare<[string | null, string], EntryRow>('SELECT * FROM entries WHERE session_id IS ? AND type = ? ORDER BY seq DESC LIMIT 1');
  }

  startSession(s: SessionStart): void {
    const start: SessionStart = {
      session_id: s.session_id,
      transport: s.transport,
      client_name: s.client_name,
      client_version: s.client_version,
      protocol_version: s.protocol_version,
      peer_pid: s.peer_pid,
      peer_uid: s.peer_uid,
      ...(s.peer_user === undefined ? {} : { peer_user: s.peer_user }),
      run_id: s.run_id,
      agent_release: s.agent_release,
    };
    this.#write('record a session start', () => {
      if (this.#startedStmt.get(s.session_id) !== undefined) {
        throw new PosternError('INTERNAL', 'session id already journaled', { details: { session_id: s.session_id } });
      }
      this.#append(s.session_id, 'session_started', start);
    });
  }

  daemonEvents(types: readonly SessionEventType[]): SessionEventRow[] {
    if (types.length === 0) return [];
    return guard('sessions', 'read events', () =>
      this.#db
        .prepare<string[], EntryRow>(`SELECT * FROM entries WHERE session_id IS NULL AND type IN (${types.map(() => '?').join(', ')}) ORDER BY seq`)
        .all(...types)
        .map(toEventRow),
    );
  }

  event(session_id: string | null, type: SessionEventType, data: Record<string, unknown>): void {
    if (!(SESSION_EVENT_TYPES as readonly string[]).includes(type)) {
      throw new PosternError('INTERNAL', `unknown session event type ${JSON.stringify(type)}`);
    }
    this.#write(`record ${type}`, () => this.#append(session_id, type, data));
  }

  endSession(session_id: string, reason: string): void {
    this.#write('record a session end', () => this.#append(session_id, 'session_closed', { reason }));
  }

  listSessions(filter: { since?: string; limit?: number } = {}): SessionRow[] {
    const since = isoBound('since', filter.since, '');
    const limit = clampLimit(filter.limit);
    return guard('sessions', 'list sessions', () => this.#listStmt.all(since, limit).map(toSessionRow));
  }

  events(session_id: string | null, opts: { limit?: number } = {}): SessionEventRow[] {
    const limit = clampLimit(opts.limit, MAX_LIMIT);
    return guard('sessions', 'read session events', () => this.#eventsStmt.all(session_id, limit).map(toEventRow));
  }

  eventsBetween(session_id: string | null, afterSeq: number, beforeSeq: number, opts: { limit?: number } = {}): SessionEventRow[] {
    const limit = clampLimit(opts.limit, MAX_LIMIT);
    return guard('sessions', 'read session events', () => this.#betweenStmt.all(session_id, afterSeq, beforeSeq, limit).map(toEventRow));
  }

  latestEvent(session_id: string | null, type: SessionEventType): SessionEventRow | undefined {
    return guard('sessions', 'read session events', () => {
      const r = this.#latestStmt.get(session_id, type);
      return r === undefined ? undefined : toEventRow(r);
    });
  }

  verify(skips?: ReadonlyMap<number, ChainHead>): ChainReport {
    const chain = this.#chain;
    return guard('sessions', 'verify the chain', () => damageAware(() => this.#db.transaction(() => chain.verify(skips)).deferred(), chain));
  }

  exportJsonl(writeLine: (line: string) => void): void {
    guard('sessions', 'export', () =>
      this.#db
        .transaction(() =>
          this.#chain.forEach((r) => {
            const { body, ...rest } = r;
            writeLine(JSON.stringify({ journal: 'sessions', ...rest, data: JSON.parse(String(body)) as unknown }));
          }),
        )
        .deferred(),
    );
  }

  #write(action: string, fn: () => void): void {
    guard('sessions', action, () => {
      const { appended } = this.#chain.write(() => {
        this.#hooks.check();
        fn();
      });
      this.#hooks.committed(false, appended);
    });
  }

  #append(session_id: string | null, type: string, data: unknown): void {
    const row: Record<string, Cell> = { at: this.#now().toISOString(), session_id, type, body: toJsonText(data) };
    this.#chain.append(row);
  }
}

export function createSessionsJournal(db: Database.Database, now: () => Date, chain: Chain = new Chain(db, SESSIONS_CONTENT_COLUMNS), hooks: CommitHooks = NO_HOOKS): SessionsJournal {
  return new SessionsJournalOnDb(db, now, chain, hooks);
}
