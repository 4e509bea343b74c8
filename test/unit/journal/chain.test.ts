/**
 * The hash chain: `verify()` is ok on an untouched journal and reports the
 * first broken seq after a raw SQLite connection edits, deletes, reorders or
 * re-hashes rows — in both journals — and flags idempotency claims that no
 * longer match the chained history. The append-only triggers refuse casual
 * UPDATE/DELETE; the tests drop them first, as an attacker would.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals } from '../../../src/journal/index.js';
import { Chain, entryHash } from '../../../src/journal/chain.js';
import { SESSIONS_CONTENT_COLUMNS } from '../../../src/journal/sessions.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { callRecord, httpTarget, sshTarget, tempJournalDir } from './helpers.js';

const t = tempJournalDir();
let keyedIntentSeq = 0;
const copies: string[] = [];
/** A fresh copy of the untouched journals. */
function copyJournals(): string {
  const root = mkdtempSync(join(tmpdir(), 'postern-tamper-'));
  copies.push(root);
  const dir = join(root, 'journal');
  cpSync(t.dir, dir, { recursive: true });
  return dir;
}

before(() => {
  const j = openJournals(t.dir);
  // activity seqs: 1 intent a, 2 outcome a, 3 rejected b, 4 intent c (keyed), 5 outcome c, 6 intent d (keyed, left open)
  const a = callRecord();
  j.activity.recordIntent({ ...a, target: httpTarget });
  j.activity.recordOutcome(a.call_id, { status: 'success', side_effect_started: true, duration_ms: 5, result: { ok: true } });
  j.activity.recordRejected({ ...callRecord(), error_code: 'CONTRACT_STALE', message: 'refresh' });
  const c = callRecord({ idempotency_key: 'kc', args_digest: 'dc' });
  j.activity.recordIntent({ ...c, target: sshTarget });
  j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 5, result: { n: 1 } });
  const d = callRecord({ idempotency_key: 'kd', args_digest: 'dd' });
  j.activity.recordIntent({ ...d, target: sshTarget });
  keyedIntentSeq = 6;
  j.sessions.event(null, 'daemon_started', { version: '0.1.0' });
  j.sessions.startSession({ session_id: 's1', transport: 'stdio', client_name: 'claude-code', client_version: '2.0', protocol_version: '2025-11-25', peer_pid: 42, peer_uid: 1000, run_id: null, agent_release: null });
  j.sessions.event('s1', 'tools_listed', { revisions: { deploy_preview: 2 } });
  j.sessions.endSession('s1', 'client closed');
  j.close();
});
after(() => {
  t.cleanup();
  for (const c of copies) rmSync(c, { recursive: true, force: true });
});

/** A fresh copy of the journals, tampered with through a raw connection. */
function tampered(file: 'activity.db' | 'sessions.db', sql: string): string {
  const dir = copyJournals();
  const db = new Database(join(dir, file));
  db.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
  db.exec(sql);
  db.close();
  return dir;
}
const verifyActivity = (dir: string) => {
  const j = openJournals(dir, { readonly: true });
  try {
    return j.activity.verify();
  } finally {
    j.close();
  }
};

describe('hash chain: activity journal', () => {
  it('an untouched journal verifies, reporting its head', () => {
    const r = verifyActivity(t.dir);
    assert.equal(r.ok, true);
    assert.equal(r.ok && r.entries, 6);
    assert.match(r.ok ? (r.head?.hash ?? '') : '', /^[0-9a-f]{64}$/);
  });

  const cases = [
    { name: 'an edited body', sql: `UPDATE entries SET body = replace(body, '"ok":true', '"ok":false') WHERE seq = 2`, seq: 2, reason: 'hash_mismatch' },
    { name: 'an edited indexed column', sql: `UPDATE entries SET tool = 'innocent_tool' WHERE seq = 3`, seq: 3, reason: 'hash_mismatch' },
    { name: 'an edited time', sql: `UPDATE entries SET at = '2020-01-01T00:00:00.000Z' WHERE seq = 4`, seq: 4, reason: 'hash_mismatch' },
    { name: 'a deleted row', sql: 'DELETE FROM entries WHERE seq = 3', seq: 3, reason: 'missing_entry' },
    { name: 'the first row deleted', sql: 'DELETE FROM entries WHERE seq = 1', seq: 1, reason: 'missing_entry' },
    {
      name: 'two rows swapped (reordered)',
      sql: `UPDATE entries SET seq = -2 WHERE seq = 2; UPDATE entries SET seq = 2 WHERE seq = 3; UPDATE entries SET seq = 3 WHERE seq = -2;`,
      seq: 2,
      reason: 'prev_hash_mismatch',
    },
  ] as const;
  for (const c of cases) {
    it(`${c.name} → first broken seq ${c.seq}`, () => {
      const r = verifyActivity(tampered('activity.db', c.sql));
      assert.deepEqual(r.ok ? r : { seq: r.first_bad_seq, reason: r.reason }, { seq: c.seq, reason: c.reason });
    });
  }

  it('a row rewritten with a recomputed hash breaks the link to the next row', () => {
    const dir = copyJournals();
    const db = new Database(join(dir, 'activity.db'));
    db.exec('DROP TRIGGER entries_no_update');
    const row = db.prepare('SELECT * FROM entries WHERE seq = 3').get() as Record<string, string | number | null>;
    const { prev_hash, hash: _old, ...content } = row;
    const forged = { ...content, error_code: 'NOTHING_TO_SEE' };
    db.prepare('UPDATE entries SET error_code = ?, hash = ? WHERE seq = 3').run('NOTHING_TO_SEE', entryHash(String(prev_hash), forged));
    db.close();
    const r = verifyActivity(dir);
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [4, 'prev_hash_mismatch']);
  });

  it('a deleted idempotency claim (which would let a retry run again) is flagged', () => {
    const r = verifyActivity(tampered('activity.db', `DELETE FROM idempotency WHERE key = 'kc'`));
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [4, 'claim_mismatch']);
  });

  it('a claim whose state was changed is flagged', () => {
    const r = verifyActivity(tampered('activity.db', `UPDATE idempotency SET state = 'completed' WHERE key = 'kd'`));
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [keyedIntentSeq, 'claim_mismatch']);
  });

  it('a forged claim with no intent behind it is flagged', () => {
    const r = verifyActivity(
      tampered('activity.db', `INSERT INTO idempotency VALUES ('deploy_preview', 'forged', 'nobody', NULL, 'x', 'completed', 99, NULL)`),
    );
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [99, 'claim_mismatch']);
  });

  it('the append-only triggers refuse UPDATE and DELETE', () => {
    const dir = copyJournals();
    const db = new Database(join(dir, 'activity.db'));
    assert.throws(() => db.exec('UPDATE entries SET tool = 1'), /append-only/);
    assert.throws(() => db.exec('DELETE FROM entries'), /append-only/);
    db.close();
  });
});

describe('hash chain: sessions journal', () => {
  const verifySessions = (dir: string) => {
    const j = openJournals(dir, { readonly: true });
    try {
      return j.sessions.verify();
    } finally {
      j.close();
    }
  };
  it('verifies untouched', () => assert.deepEqual(verifySessions(t.dir).ok, true));
  it('an edited event → its seq', () => {
    const r = verifySessions(tampered('sessions.db', `UPDATE entries SET body = '{"revisions":{}}' WHERE seq = 3`));
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [3, 'hash_mismatch']);
  });
  it('a deleted session start → its seq', () => {
    const r = verifySessions(tampered('sessions.db', 'DELETE FROM entries WHERE seq = 2'));
    assert.deepEqual(r.ok ? r : [r.first_bad_seq, r.reason], [2, 'missing_entry']);
  });
});

describe('hash chain: the head a write reports', () => {
  it('is the last appended entry, without the entries of a savepoint that failed; null when nothing was appended', () => {
    const u = tempJournalDir();
    const j = openJournals(u.dir);
    j.close();
    const db = new Database(join(u.dir, 'sessions.db'));
    try {
      const chain = new Chain(db, SESSIONS_CONTENT_COLUMNS);
      const row = (n: number) => ({ at: '2026-01-01T00:00:00.000Z', session_id: null, type: 'daemon_started', body: JSON.stringify({ n }) });
      const none = chain.write(() => 'nothing');
      assert.deepEqual(none, { value: 'nothing', appended: null });
      const { appended } = chain.write(() => {
        chain.savepoint(() => chain.append(row(1)));
        assert.throws(() =>
          chain.savepoint(() => {
            chain.append(row(2));
            throw new Error('refused');
          }),
        );
      });
      assert.deepEqual(appended, chain.head());
      assert.equal(appended?.seq, 1);
      const last = chain.write(() => {
        chain.append(row(3));
        assert.throws(() =>
          chain.savepoint(() => {
            chain.append(row(4));
            throw new Error('refused');
          }),
        );
      });
      assert.deepEqual(last.appended, chain.head(), 'a failed last savepoint takes its head back');
      assert.equal(chain.verify().ok, true);
      assert.throws(() => chain.write(() => {
        chain.append(row(5));
        throw new Error('rolled back');
      }));
      assert.equal(chain.write(() => undefined).appended, null, 'a rolled-back write leaves nothing to report');
      assert.throws(() => chain.write(() => chain.write(() => undefined)), (e) => isPosternError(e, 'INTERNAL'), 'no write inside a write');
      assert.equal(chain.head().seq, 2);
    } finally {
      db.close();
      u.cleanup();
    }
  });

  it('a group commit whose last entry is refused leaves an exclusive journal writable', () => {
    const u = tempJournalDir();
    const heads: number[] = [];
    const j = openJournals(u.dir, { exclusive: true, onCommit: (name, head) => name === 'activity' && heads.push(head.seq) });
    try {
      const a = callRecord({ idempotency_key: 'ka', args_digest: 'da' });
      // The second reuses the call id (with another key): refused inside the group, the first stays.
      const results = j.activity.recordIntents([{ ...a, target: httpTarget }, { ...a, idempotency_key: 'kb', target: httpTarget }]);
      assert.deepEqual(results.map((r) => r.ok), [true, false]);
      j.activity.recordOutcome(a.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { ok: true } });
      assert.deepEqual(heads, [1, 2]);
      assert.equal(j.activity.verify().ok, true);
    } finally {
      j.close();
      u.cleanup();
    }
  });
});
