/**
 * The activity journal's reads: a key's claim (checked against the file
 * watch in the same read snapshot), a call, the audit's lists, the pages the
 * limits, `catalog check --against-journal` and the redactor read at start,
 * the chain's verification and the export. Nothing here writes.
 */
import type Database from 'better-sqlite3';
import { damageAware } from './chain.js';
import { toCallView } from './activity-schema.js';
import type { CallRow, HeadBody, HeadKind } from './activity-schema.js';
import { EXPOSURES_PAGE_SQL, GET_CALL_SQL, HEADS_PAGE_SQL, LIMIT_COUNTS_SQL, LIMIT_RECENT_SQL, listCallsQuery } from './activity-queries.js';
import type { ActivityStore } from './activity-store.js';
import type { CallHead, ExposureEntry, HistoricalArguments, LimitHistory } from './activity-types.js';
import { firstClaimMismatch } from './claims-check.js';
import { guard } from './database.js';
import type { CommitHooks } from './hooks.js';
import type { CallFilter, CallView, ChainHead, ChainReport, Exposure, IdempotencyRecord } from './types.js';

const PAGE = 500;

type HeadPageRow = { seq: number; at: string; kind: HeadKind; error_code: string | null; body: string };
/** An entry's columns as the exposure lookups read them (`body` is the JSON text). */
export type ExposureRow = Omit<ExposureEntry, 'exposures'> & { readonly body: string };

/** The exposures an entry recorded (a head's in its call record, an outcome's in its body); undefined when none. */
export function exposureEntryOf(row: ExposureRow): ExposureEntry | undefined {
  const body = JSON.parse(row.body) as { call?: { exposures?: unknown }; exposures?: unknown };
  const found = row.kind === 'outcome' ? body.exposures : body.call?.exposures;
  if (!Array.isArray(found) || found.length === 0) return undefined;
  return { seq: row.seq, at: row.at, kind: row.kind, call_id: row.call_id, tool: row.tool, session_id: row.session_id, exposures: found as Exposure[] };
}

export class ActivityReads {
  readonly #store: ActivityStore;
  readonly #db: Database.Database;
  readonly #getStmt: Database.Statement<[string], CallRow>;
  readonly #headsPage: Database.Statement<[number, number], HeadPageRow>;
  readonly #exposuresPage: Database.Statement<[number, number], ExposureRow>;
  readonly #listStmts = new Map<string, Database.Statement<(string | number)[], CallRow>>();
  /** The watch's check and the lookup in one read snapshot (one transaction, not one per statement). */
  readonly #lookUpKey: Database.Transaction<(tool: string, key: string) => IdempotencyRecord | undefined>;

  constructor(store: ActivityStore, hooks: CommitHooks) {
    this.#store = store;
    const db = (this.#db = store.db);
    this.#getStmt = db.prepare<[string], CallRow>(GET_CALL_SQL);
    this.#headsPage = db.prepare<[number, number], HeadPageRow>(HEADS_PAGE_SQL);
    this.#exposuresPage = db.prepare<[number, number], ExposureRow>(EXPOSURES_PAGE_SQL);
    this.#lookUpKey = db.transaction((tool: string, key: string): IdempotencyRecord | undefined => {
      hooks.check();
      const held = store.claimOf(tool, key);
      return held === undefined ? undefined : store.idempotencyRecord(held);
    });
  }

  findByKey(tool: string, key: string): IdempotencyRecord | undefined {
    return read('look up an idempotency key', () => this.#lookUpKey.deferred(tool, key));
  }

  getCall(call_id: string): CallView | undefined {
    return read('read a call', () => {
      const row = this.#getStmt.get(call_id);
      return row === undefined ? undefined : toCallView(row);
    });
  }

  listCalls(filter: CallFilter = {}): CallView[] {
    const q = listCallsQuery(filter);
    return read('list calls', () => {
      let stmt = this.#listStmts.get(q.sql);
      if (stmt === undefined) {
        stmt = this.#db.prepare<(string | number)[], CallRow>(q.sql);
        this.#listStmts.set(q.sql, stmt);
      }
      return stmt.all(...q.params).map(toCallView);
    });
  }

  *exposures(): Iterable<ExposureEntry> {
    for (const row of this.#pages('read recorded exposures', this.#exposuresPage)) {
      const found = exposureEntryOf(row);
      if (found !== undefined) yield found;
    }
  }

  *rawArgumentsByTool(): Iterable<HistoricalArguments> {
    for (const row of this.#pages('read historical arguments', this.#headsPage)) {
      const { call } = JSON.parse(row.body) as HeadBody;
      yield {
        tool: call.tool,
        revision: call.revision_seen,
        raw_arguments: call.raw_arguments,
        call_id: call.call_id,
        error_code: row.kind === 'rejected' ? row.error_code : null,
      };
    }
  }

  limitHistory(since: string): LimitHistory {
    return read('count executed calls', () => ({
      counts: this.#db.prepare<[], LimitHistory['counts'][number]>(LIMIT_COUNTS_SQL).all().map((r) => ({ ...r, run_id: typeof r.run_id === 'string' ? r.run_id : null })),
      recent: this.#db.prepare<[string], LimitHistory['recent'][number]>(LIMIT_RECENT_SQL).all(since),
    }));
  }

  *callHeads(): Iterable<CallHead> {
    for (const row of this.#pages('read call heads', this.#headsPage)) {
      yield { kind: row.kind, at: row.at, error_code: row.kind === 'rejected' ? row.error_code : null, call: (JSON.parse(row.body) as HeadBody).call };
    }
  }

  /** The chain walked (chain.ts; `skips`: a shipped copy's accepted gaps), then the claims checked against it. */
  verify(skips?: ReadonlyMap<number, ChainHead>): ChainReport {
    const db = this.#db;
    const chain = this.#store.chain;
    return read('verify the chain', () =>
      damageAware(
        () =>
          db
            .transaction((): ChainReport => {
              const report = chain.verify(skips);
              if (!report.ok) return report;
              const bad = firstClaimMismatch(db, chain.base());
              if (bad === undefined) return report;
              return { ok: false, entries_checked: report.entries, first_bad_seq: bad, reason: 'claim_mismatch' };
            })
            .deferred(),
        chain,
      ),
    );
  }

  exportJsonl(writeLine: (line: string) => void): void {
    read('export', () =>
      this.#db
        .transaction(() =>
          this.#store.chain.forEach((r) => {
            const { body, ...rest } = r;
            writeLine(JSON.stringify({ journal: 'activity', ...rest, data: JSON.parse(String(body)) as unknown }));
          }),
        )
        .deferred(),
    );
  }

  /** Every row of a `(after seq, limit)` page statement, in seq order, a page per read (no statement held open across a yield). */
  *#pages<R extends { seq: number }>(action: string, page: Database.Statement<[number, number], R>): Iterable<R> {
    let after = 0;
    for (;;) {
      const rows = read(action, () => page.all(after, PAGE));
      yield* rows;
      const last = rows.at(-1);
      if (last === undefined || rows.length < PAGE) return;
      after = last.seq;
    }
  }
}

function read<T>(action: string, fn: () => T): T {
  return guard('activity', action, fn);
}
