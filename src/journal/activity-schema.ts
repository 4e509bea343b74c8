/**
 * The activity journal's tables, and how its rows map to the public shapes.
 *
 * `entries` is the append-only, hash-chained history. Each call has exactly
 * one *head* entry — `intent` (it will run), `rejected` (refused before any
 * effect) or `replay` (answered from a stored result) — and an intent gets at
 * most one `outcome` entry (unique indexes enforce both). The JSON `body`
 * holds the full record; a few fields are copied into indexed columns so the
 * audit can answer "what did tool X / session Y do, and when" on 100k+ calls.
 *
 * `idempotency` is state, not history: the current holder of each
 * (tool, key). Every change to it happens in the transaction that appends the
 * entry explaining it — an intent (`claim = 'claimed'`), or an outcome
 * (`claim` = completed / released / outcome_unknown) — so the table can be
 * rebuilt from, and checked against, the chain.
 */
import type { SchemaSpec } from './database.js';
import type { CallOutcome, CallRecord, CallStatus, CallView, ClaimEffect, TargetDetails } from './types.js';

/** SQL for "this row is a call's first entry"; must match the partial indexes verbatim. */
export const HEAD = `kind IN ('intent', 'rejected', 'replay')`;

/**
 * The secondary indexes of `entries`, each there for a query that needs it
 * (docs/decisions.md, "The activity journal's indexes"; the plans are checked
 * in test/unit/journal/scale.test.ts). Every index is one more B-tree page
 * written per entry: an intent touches at most five of them (the key index
 * only when the call has a key), a rejection one more (its error code), an
 * outcome one (two with an error code).
 */
const ENTRIES_INDEXES = {
  /** One head per call (an invariant); getCall, the write path's head lookups, a call's entries for a bundle. */
  entries_head: `CREATE UNIQUE INDEX entries_head ON entries(call_id) WHERE ${HEAD}`,
  /** At most one outcome per intent (an invariant); the outcome of a call. */
  entries_outcome: `CREATE UNIQUE INDEX entries_outcome ON entries(call_id) WHERE kind = 'outcome'`,
  /** Newest first, --since/--until, the per-minute limit window at start (seq order is not time order across a wall-clock step). */
  entries_head_at: `CREATE INDEX entries_head_at ON entries(at) WHERE ${HEAD}`,
  entries_head_tool: `CREATE INDEX entries_head_tool ON entries(tool, at) WHERE ${HEAD}`,
  entries_head_session: `CREATE INDEX entries_head_session ON entries(session_id, at) WHERE ${HEAD}`,
  /** Only calls with a key: `idempotency_key = ?` implies the second term, so a keyless call writes no entry here. */
  entries_head_key: `CREATE INDEX entries_head_key ON entries(idempotency_key, at) WHERE ${HEAD} AND idempotency_key IS NOT NULL`,
  entries_error: `CREATE INDEX entries_error ON entries(error_code) WHERE error_code IS NOT NULL`,
} as const;

/** The names of the secondary indexes a current activity journal has. */
export const ENTRIES_INDEX_NAMES = Object.keys(ENTRIES_INDEXES) as readonly (keyof typeof ENTRIES_INDEXES)[];

export const ACTIVITY_SCHEMA: SchemaSpec = {
  name: 'activity',
  file: 'activity.db',
  applicationId: 0x50534131, // 'PSA1'
  // 2: the `meta` table with the journal id (database.ts); 3: the leaner indexes (below).
  version: 3,
  ddl: `
    CREATE TABLE entries (
      seq INTEGER PRIMARY KEY,
      at TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('intent', 'rejected', 'replay', 'outcome')),
      call_id TEXT NOT NULL,
      session_id TEXT,
      tool TEXT NOT NULL,
      idempotency_key TEXT,
      error_code TEXT,
      claim TEXT CHECK (claim IN ('claimed', 'completed', 'released', 'outcome_unknown')),
      body TEXT NOT NULL,
      prev_hash TEXT NOT NULL,
      hash TEXT NOT NULL
    ) STRICT;
    ${Object.values(ENTRIES_INDEXES).join(';\n    ')};
    CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;
    CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;

    CREATE TABLE idempotency (
      tool TEXT NOT NULL,
      key TEXT NOT NULL,
      call_id TEXT NOT NULL UNIQUE,
      session_id TEXT,
      args_digest TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed', 'outcome_unknown')),
      intent_seq INTEGER NOT NULL,
      outcome_seq INTEGER,
      PRIMARY KEY (tool, key)
    ) STRICT, WITHOUT ROWID;
  `,
  migrations: [
    {
      // Indexes only: no row changes, so the chain (and every checkpoint, anchor and bundle) is untouched.
      // `entries_intent` served only the start's scans (open intents, limit counts); the key index now skips keyless calls.
      version: 3,
      ddl: `DROP INDEX IF EXISTS entries_intent; DROP INDEX IF EXISTS entries_head_key; ${ENTRIES_INDEXES.entries_head_key};`,
    },
  ],
};

/** The chained content columns of `entries`, in insertion order. */
export const CONTENT_COLUMNS = ['seq', 'at', 'kind', 'call_id', 'session_id', 'tool', 'idempotency_key', 'error_code', 'claim', 'body'] as const;

export type HeadKind = 'intent' | 'rejected' | 'replay';

export interface HeadBody {
  readonly call: CallRecord;
  readonly target?: TargetDetails;
  readonly error_code?: string;
  readonly message?: string;
  readonly replay_of?: string;
}

export type OutcomeBody = Omit<CallOutcome, 'at'>;

/** A head row joined with its outcome (if any). */
export interface CallRow {
  readonly seq: number;
  readonly at: string;
  readonly kind: HeadKind;
  readonly body: string;
  readonly o_at: string | null;
  readonly o_body: string | null;
}

export const CALL_SELECT = `
  SELECT h.seq AS seq, h.at AS at, h.kind AS kind, h.body AS body, o.at AS o_at, o.body AS o_body
  FROM entries h LEFT JOIN entries o ON o.call_id = h.call_id AND o.kind = 'outcome'`;

export interface ClaimRow {
  readonly tool: string;
  readonly key: string;
  readonly call_id: string;
  readonly session_id: string | null;
  readonly args_digest: string;
  readonly state: 'in_progress' | 'completed' | 'outcome_unknown';
  readonly intent_seq: number;
  readonly outcome_seq: number | null;
}

/** Copies exactly the documented CallRecord fields (the caller's object may carry more). */
export function callRecordOf(r: CallRecord): CallRecord {
  return {
    call_id: r.call_id,
    session_id: r.session_id,
    run_id: r.run_id,
    agent_release: r.agent_release ?? null,
    toolset_planned: r.toolset_planned ?? null,
    tool: r.tool,
    revision_seen: r.revision_seen,
    revision_executed: r.revision_executed,
    handler_revision: r.handler_revision,
    raw_arguments: r.raw_arguments,
    normalized_arguments: r.normalized_arguments,
    adapter_applied: r.adapter_applied,
    idempotency_key: r.idempotency_key,
    args_digest: r.args_digest,
    approval: r.approval,
    decision_path: r.decision_path,
    side_effect_started: r.side_effect_started,
    at: r.at,
    ...(r.exposures === undefined || r.exposures.length === 0 ? {} : { exposures: r.exposures }),
    ...(r.shadow === undefined ? {} : { shadow: r.shadow }),
  };
}

export function claimStateOf(effect: ClaimEffect): ClaimRow['state'] | undefined {
  switch (effect) {
    case 'completed':
      return 'completed';
    case 'outcome_unknown':
      return 'outcome_unknown';
    case 'released':
    case null:
      return undefined;
  }
}

export function toCallView(row: CallRow): CallView {
  const head = JSON.parse(row.body) as HeadBody;
  const outcome: CallOutcome | null =
    row.o_at === null || row.o_body === null ? null : { at: row.o_at, ...(JSON.parse(row.o_body) as OutcomeBody) };
  let status: CallStatus;
  switch (row.kind) {
    case 'rejected':
      status = 'rejected';
      break;
    case 'replay':
      status = 'replayed';
      break;
    case 'intent':
      status = outcome?.status ?? 'in_progress';
      break;
  }
  let target = head.target ?? null;
  if (target?.kind === 'http' && target.connected_ip === undefined && typeof outcome?.connected_ip === 'string') {
    target = { ...target, connected_ip: outcome.connected_ip };
  }
  return {
    seq: row.seq,
    journaled_at: row.at,
    status,
    call: head.call,
    target,
    rejection: row.kind === 'rejected' ? { error_code: head.error_code ?? '', message: head.message ?? '' } : null,
    replay_of: head.replay_of ?? null,
    outcome,
  };
}
