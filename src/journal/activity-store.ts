/**
 * The activity journal's write primitives, shared by the pipeline-facing API
 * and crash recovery. Every method here runs inside a caller's BEGIN
 * IMMEDIATE transaction, so a chained entry and the idempotency change it
 * explains are committed together or not at all.
 *
 * Invariants:
 * - an outcome is appended only for a call whose head is an intent and which
 *   has no outcome yet (INTERNAL otherwise — a pipeline bug, not an I/O fault);
 * - a claim changes only when the call that holds it gets its outcome;
 * - `released` deletes the claim (the key was not consumed); `completed` and
 *   `outcome_unknown` keep it forever, so a retry can never run again.
 */
import type Database from 'better-sqlite3';
import { PosternError } from '../rules/errors.js';
import { Chain } from './chain.js';
import { CONTENT_COLUMNS, HEAD, claimStateOf } from './activity-schema.js';
import type { ClaimRow, HeadKind, OutcomeBody } from './activity-schema.js';
import { toJsonText } from './json.js';
import type { CallRecord, ClaimEffect, IdempotencyRecord } from './types.js';

interface HeadRow {
  readonly seq: number;
  readonly kind: HeadKind;
  readonly tool: string;
  readonly session_id: string | null;
  readonly idempotency_key: string | null;
}

export class ActivityStore {
  readonly chain: Chain;
  private readonly headStmt: Database.Statement<[string], HeadRow>;
  private readonly outcomeSeqStmt: Database.Statement<[string], { seq: number }>;
  private readonly bodyStmt: Database.Statement<[number], { at: string; body: string }>;
  private readonly claimStmt: Database.Statement<[string, string], ClaimRow>;
  private readonly insertClaimStmt: Database.Statement<[ClaimRow]>;
  private readonly updateClaimStmt: Database.Statement<[string, number, string, string]>;
  private readonly deleteClaimStmt: Database.Statement<[string, string]>;

  constructor(
    readonly db: Database.Database,
    private readonly now: () => Date,
  ) {
    this.chain = new Chain(db, CONTENT_COLUMNS);
    this.headStmt = db.prepare(`SELECT seq, kind, tool, session_id, idempotency_key FROM entries WHERE call_id = ? AND ${HEAD}`);
    this.outcomeSeqStmt = db.prepare(`SELECT seq FROM entries WHERE call_id = ? AND kind = 'outcome'`);
    this.bodyStmt = db.prepare('SELECT at, body FROM entries WHERE seq = ?');
    this.claimStmt = db.prepare('SELECT * FROM idempotency WHERE tool = ? AND key = ?');
    this.insertClaimStmt = db.prepare(`INSERT INTO idempotency (tool, key, call_id, session_id, args_digest, state, intent_seq, outcome_seq)
      VALUES (@tool, @key, @call_id, @session_id, @args_digest, @state, @intent_seq, @outcome_seq)`);
    this.updateClaimStmt = db.prepare('UPDATE idempotency SET state = ?, outcome_seq = ? WHERE tool = ? AND key = ?');
    this.deleteClaimStmt = db.prepare('DELETE FROM idempotency WHERE tool = ? AND key = ?');
  }

  claimOf(tool: string, key: string): ClaimRow | undefined {
    return this.claimStmt.get(tool, key);
  }

  hasHead(call_id: string): boolean {
    return this.headStmt.get(call_id) !== undefined;
  }

  /** Appends a call's first entry; with `claim`, also takes the (tool, key) claim. */
  appendHead(kind: HeadKind, call: CallRecord, body: string, error_code: string | null, claim: boolean): number {
    if (this.hasHead(call.call_id)) {
      throw new PosternError('INTERNAL', 'call id already journaled', { details: { call_id: call.call_id } });
    }
    const key = call.idempotency_key;
    const digest = call.args_digest;
    if (claim && (key === null || digest === null)) {
      throw new PosternError('INTERNAL', 'a claim needs an idempotency key and an args_digest', { details: { call_id: call.call_id } });
    }
    const seq = this.chain.append({
      at: this.now().toISOString(),
      kind,
      call_id: call.call_id,
      session_id: call.session_id,
      tool: call.tool,
      idempotency_key: call.idempotency_key,
      error_code,
      claim: claim ? 'claimed' : null,
      body,
    });
    if (claim && key !== null && digest !== null) {
      this.insertClaimStmt.run({
        tool: call.tool,
        key,
        call_id: call.call_id,
        session_id: call.session_id,
        args_digest: digest,
        state: 'in_progress',
        intent_seq: seq,
        outcome_seq: null,
      });
    }
    return seq;
  }

  /** Appends the outcome of an intent and applies its effect on the call's claim. */
  appendOutcome(call_id: string, body: Omit<OutcomeBody, 'claim'>, effectFor: (held: ClaimRow) => ClaimEffect): ClaimEffect {
    const head = this.headStmt.get(call_id);
    if (head?.kind !== 'intent') {
      throw new PosternError('INTERNAL', 'no intent is journaled for this call', { details: { call_id } });
    }
    if (this.outcomeSeqStmt.get(call_id) !== undefined) {
      throw new PosternError('INTERNAL', 'this call already has an outcome', { details: { call_id } });
    }
    const held = head.idempotency_key === null ? undefined : this.claimOf(head.tool, head.idempotency_key);
    const claim = held !== undefined && held.call_id === call_id ? effectFor(held) : null;
    const seq = this.chain.append({
      at: this.now().toISOString(),
      kind: 'outcome',
      call_id,
      session_id: head.session_id,
      tool: head.tool,
      idempotency_key: head.idempotency_key,
      error_code: body.error_code,
      claim,
      body: toJsonText({ ...body, claim } satisfies OutcomeBody),
    });
    if (held !== undefined && claim !== null) {
      const state = claimStateOf(claim);
      if (state === undefined) this.deleteClaimStmt.run(held.tool, held.key);
      else this.updateClaimStmt.run(state, seq, held.tool, held.key);
    }
    return claim;
  }

  /** The public view of a claim, with the stored result once completed. */
  idempotencyRecord(c: ClaimRow): IdempotencyRecord {
    const base = { call_id: c.call_id, tool: c.tool, key: c.key, args_digest: c.args_digest, state: c.state, session_id: c.session_id };
    if (c.state !== 'completed' || c.outcome_seq === null) return base;
    const row = this.bodyStmt.get(c.outcome_seq);
    if (row === undefined) return base;
    const o = JSON.parse(row.body) as OutcomeBody;
    const status: 'success' | 'error' = o.status === 'success' ? 'success' : 'error';
    const done = { ...base, status, error_code: o.error_code, completed_at: row.at };
    return o.result === undefined ? done : { ...done, result: o.result };
  }
}
