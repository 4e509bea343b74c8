/**
 * Outcomes the journal refused (another process held its lock), kept and
 * written again (src/daemon/pipeline/pending-outcomes.ts): never given up
 * after a number of attempts, and kept in a file — written before `add`
 * returns — that the next start reads, so a kill before the retry loses
 * nothing; the file is removed once the outcome is journaled.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PENDING_OUTCOMES_FILE, PendingOutcomes, readPendingOutcomes, type PendingOutcome } from '../../../src/daemon/pipeline/pending-outcomes.js';
import { PosternError } from '../../../src/rules/errors.js';
import { waitFor } from '../../helpers/wait.js';

const pending = (callId: string): PendingOutcome => ({
  callId,
  tool: 'quick_write',
  key: `key-${callId}`,
  argsDigest: 'd'.repeat(64),
  sessionId: 's-1',
  outcome: { status: 'success', side_effect_started: true, duration_ms: 3, result: { ok: true } },
  finishedAt: '2031-05-01T00:00:00.000Z',
});

test('kept durably before add returns; a later start reads it; journaled → the file is removed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-pending-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, PENDING_OUTCOMES_FILE);
  let locked = true;
  const written: string[] = [];
  const p = new PendingOutcomes(
    (id) => {
      if (locked) throw new PosternError('JOURNAL_UNAVAILABLE', 'journal: database is locked');
      written.push(id);
    },
    () => undefined,
    [0],
    file,
  );
  await p.add(pending('c-1'));
  // What a kill now leaves: the next start journals it before recovery.
  assert.deepEqual(readPendingOutcomes(file).map((x) => [x.callId, x.outcome.status]), [['c-1', 'success']]);
  assert.equal(p.holder('quick_write', 'key-c-1')?.state, 'completed', 'a retry meanwhile is a replay');
  locked = false;
  await waitFor(() => written.includes('c-1'), 'the retry to journal it');
  await waitFor(async () => (await p.settled().then(() => !existsSync(file))), 'the file to be removed');
  assert.equal(p.size, 0);
});

test('never given up: retried past the last delay until it is journaled', async () => {
  let attempts = 0;
  const lines: string[] = [];
  const p = new PendingOutcomes(
    () => {
      attempts += 1;
      if (attempts <= 5) throw new PosternError('JOURNAL_UNAVAILABLE', 'journal: database is locked');
    },
    (l) => lines.push(l),
    [0, 0],
  );
  await p.add(pending('c-2'));
  await waitFor(() => p.size === 0, () => `the outcome to be journaled (attempts so far: ${attempts})`);
  assert.equal(attempts, 6, 'written at the sixth attempt, three past the last delay');
  assert.ok(lines.some((l) => /journaled on retry 6/.test(l)), lines.join('\n'));
});

test('a file with a torn last line: the whole lines are read, the torn one skipped', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-pending-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, PENDING_OUTCOMES_FILE);
  writeFileSync(file, `${JSON.stringify(pending('c-3'))}\n{"callId":"c-4","outc`);
  assert.deepEqual(readPendingOutcomes(file).map((x) => x.callId), ['c-3']);
  assert.deepEqual(readPendingOutcomes(join(dir, 'none')), []);
});
