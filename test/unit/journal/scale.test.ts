/**
 * Scale: the audit's questions are answered from indexes on a journal of
 * 100k calls. Checked with EXPLAIN QUERY PLAN (no bare table scans, no sort of
 * the whole journal), not with timings. Rows are bulk-inserted through a raw
 * connection (one transaction), so their hashes are placeholders — this file
 * is about query plans, chain.test.ts is about the chain.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals } from '../../../src/journal/index.js';
import type { CallFilter } from '../../../src/journal/index.js';
import { GET_CALL_SQL, LIMIT_RECENT_SQL, OPEN_INTENTS_SQL, listCallsQuery } from '../../../src/journal/activity-queries.js';
import { ENTRIES_INDEX_NAMES, HEAD } from '../../../src/journal/activity-schema.js';
import { tempJournalDir } from './helpers.js';

const CALLS = 100_000;
const t = tempJournalDir();
let raw: Database.Database;

before(() => {
  openJournals(t.dir).close();
  raw = new Database(join(t.dir, 'activity.db'));
  const ins = raw.prepare(
    'INSERT INTO entries (seq, at, kind, call_id, session_id, tool, idempotency_key, error_code, claim, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)',
  );
  raw.transaction(() => {
    let seq = 0;
    for (let i = 0; i < CALLS; i += 1) {
      const at = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
      const tool = `tool_${i % 50}`;
      const session = `sess_${i % 1000}`;
      const call = { call_id: `call_${i}`, tool, session_id: session, raw_arguments: { i } };
      if (i % 5 !== 0) {
        ins.run(++seq, at, 'rejected', call.call_id, session, tool, null, 'VALIDATION_FAILED', null, JSON.stringify({ call, error_code: 'VALIDATION_FAILED', message: 'm' }), 'p', 'h');
      } else {
        ins.run(++seq, at, 'intent', call.call_id, session, tool, `key_${i}`, null, null, JSON.stringify({ call }), 'p', 'h');
        const err = i % 7 === 0 ? 'TARGET_ERROR' : null;
        ins.run(++seq, at, 'outcome', call.call_id, session, tool, `key_${i}`, err, null, JSON.stringify({ status: err ? 'error' : 'success', error_code: err }), 'p', 'h');
      }
    }
  })();
});
after(() => {
  raw.close();
  t.cleanup();
});

function plan(sql: string, params: readonly unknown[]): string[] {
  return raw
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...params)
    .map((r) => (r as { detail: string }).detail);
}
function assertIndexed(details: string[]): void {
  for (const d of details) assert.doesNotMatch(d, /^SCAN \w+$/, `bare table scan in ${JSON.stringify(details)}`);
}

describe('activity journal at 100k calls: query plans', () => {
  const cases: { name: string; filter: CallFilter; index: RegExp; sorted: boolean }[] = [
    { name: 'tool', filter: { tool: 'tool_3' }, index: /^SEARCH h USING INDEX entries_head_tool \(tool=\?\)/, sorted: true },
    { name: 'tool + since', filter: { tool: 'tool_3', since: '2026-01-01T10:00:00Z' }, index: /^SEARCH h USING INDEX entries_head_tool \(tool=\? AND at>\?\)/, sorted: true },
    { name: 'session', filter: { session_id: 'sess_9' }, index: /^SEARCH h USING INDEX entries_head_session/, sorted: true },
    { name: 'idempotency key', filter: { idempotency_key: 'key_10' }, index: /^SEARCH h USING INDEX entries_head_key/, sorted: true },
    { name: 'time window', filter: { since: '2026-01-01T10:00:00Z', until: '2026-01-01T11:00:00Z' }, index: /^SEARCH h USING INDEX entries_head_at/, sorted: true },
    { name: 'no filter (newest first)', filter: {}, index: /^SCAN h USING INDEX entries_head_at/, sorted: true },
    // Driven from the error-code index; only the matching calls are sorted.
    { name: 'error code', filter: { error_code: 'TARGET_ERROR' }, index: /USING INDEX entries_error \(error_code=\?\)/, sorted: false },
  ];
  for (const c of cases) {
    it(`listCalls by ${c.name} uses an index`, () => {
      const q = listCallsQuery(c.filter);
      const details = plan(q.sql, q.params);
      assertIndexed(details);
      assert.ok(details.some((d) => c.index.test(d)), JSON.stringify(details));
      assert.ok(details.some((d) => /^SEARCH o USING INDEX entries_outcome/.test(d)), 'outcome joined by index');
      if (c.sorted) assert.ok(!details.some((d) => /TEMP B-TREE/.test(d)), `no sort of the journal: ${JSON.stringify(details)}`);
    });
  }

  it('getCall uses the head index; crash recovery scans the table once, with each outcome found by index', () => {
    assertIndexed(plan(GET_CALL_SQL, ['call_5']));
    assert.match(plan(GET_CALL_SQL, ['call_5'])[0]!, /USING INDEX entries_head \(call_id=\?\)/);
    // Run once at the daemon's start: no index of intents is kept for it (every call would pay for one).
    const open = plan(OPEN_INTENTS_SQL, []);
    assert.match(open[0]!, /^SCAN i$/);
    assert.ok(open.some((d) => /^SEARCH o USING COVERING INDEX entries_outcome \(call_id=\?\)/.test(d)), JSON.stringify(open));
  });

  it('every secondary index of entries serves a real query, and no other index exists', () => {
    const used = new Set<string>();
    const queries: [string, readonly unknown[]][] = [
      [GET_CALL_SQL, ['call_5']],
      [LIMIT_RECENT_SQL, ['2026-01-02T03:00:00Z']],
      ...cases.map((c): [string, readonly unknown[]] => {
        const q = listCallsQuery(c.filter);
        return [q.sql, q.params];
      }),
    ];
    for (const [sql, params] of queries) for (const d of plan(sql, params)) for (const m of d.matchAll(/INDEX (\w+)/g)) used.add(m[1]!);
    assert.deepEqual([...used].sort(), [...ENTRIES_INDEX_NAMES].sort());
    const present = raw.prepare<[], string>(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL`).pluck().all();
    assert.deepEqual(present.sort(), [...ENTRIES_INDEX_NAMES].sort());
  });

  it('the key index holds only heads with a key', () => {
    const keyed = raw.prepare(`SELECT count(*) FROM entries WHERE ${HEAD} AND idempotency_key IS NOT NULL`).pluck().get();
    const indexed = raw.prepare(`SELECT count(*) FROM entries INDEXED BY entries_head_key WHERE ${HEAD} AND idempotency_key IS NOT NULL`).pluck().get();
    assert.equal(indexed, keyed);
    assert.equal(keyed, CALLS / 5);
  });

  it('listCalls({ tool }) returns the newest calls of that tool', () => {
    const j = openJournals(t.dir, { readonly: true });
    try {
      const calls = j.activity.listCalls({ tool: 'tool_3', limit: 20 });
      assert.equal(calls.length, 20);
      assert.ok(calls.every((c) => c.call.tool === 'tool_3'));
      assert.equal(calls[0]!.call.call_id, 'call_99953');
      assert.deepEqual(
        calls.map((c) => c.journaled_at),
        calls.map((c) => c.journaled_at).sort().reverse(),
      );
      assert.equal(j.activity.getCall('call_99955')?.status, 'success');
      assert.equal(j.activity.getCall('call_99960')?.status, 'error'); // 99960 % 7 === 0
      assert.equal(j.activity.getCall('call_99951')?.status, 'rejected');
    } finally {
      j.close();
    }
  });
});
