// @subject time: key retention window (run again a year ahead by .ci/run)
/** The idempotency decision as a table (DESIGN §6.5). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideIdempotency } from '../../../src/daemon/pipeline/stages/key/idempotency.js';
import { KeyReservations } from '../../../src/daemon/pipeline/key-reservations.js';
import type { IdempotencyRecord } from '../../../src/journal/index.js';

const NOW = new Date('2030-01-10T00:00:00.000Z');
const retention = { now: NOW, days: 7 };
const holder = (state: IdempotencyRecord['state'], args_digest = 'd1', completed_at?: string): IdempotencyRecord => ({
  call_id: 'c1', tool: 't', key: 'k', args_digest, state, session_id: 's',
  ...(state === 'completed' ? { status: 'success' as const, completed_at: completed_at ?? '2030-01-09T00:00:00.000Z' } : {}),
});

describe('decideIdempotency', () => {
  const rows: [string, IdempotencyRecord | undefined, { callId: string; argsDigest: string } | undefined, string][] = [
    ['fresh key', undefined, undefined, 'proceed'],
    ['in flight here, same arguments', undefined, { callId: 'c0', argsDigest: 'd1' }, 'in_progress'],
    ['in flight here, other arguments', undefined, { callId: 'c0', argsDigest: 'd2' }, 'conflict'],
    ['completed, same arguments', holder('completed'), undefined, 'replay'],
    ['completed exactly at the end of the window', holder('completed', 'd1', '2030-01-03T00:00:00.000Z'), undefined, 'replay'],
    ['completed past the retention window: expired, never re-run', holder('completed', 'd1', '2030-01-02T23:59:59.000Z'), undefined, 'expired'],
    ['completed "in the future" (the wall clock stepped back)', holder('completed', 'd1', '2030-02-01T00:00:00.000Z'), undefined, 'replay'],
    ['completed with no readable completion time', holder('completed', 'd1', 'garbage'), undefined, 'expired'],
    ['expired, other arguments', holder('completed', 'd2', '2029-01-01T00:00:00.000Z'), undefined, 'conflict'],
    ['completed, other arguments', holder('completed', 'd2'), undefined, 'conflict'],
    ['journaled in progress', holder('in_progress'), undefined, 'in_progress'],
    ['outcome unknown after a crash', holder('outcome_unknown'), undefined, 'outcome_unknown'],
    ['outcome unknown, other arguments', holder('outcome_unknown', 'd2'), undefined, 'conflict'],
  ];
  for (const [name, h, r, expected] of rows) {
    it(name, () => assert.equal(decideIdempotency(h, r, 'd1', retention).kind, expected));
  }

  it('a reservation is held by one call and released only by it', () => {
    const res = new KeyReservations();
    assert.equal(res.reserve('t', 'k', 'a', 'd1'), true);
    assert.equal(res.reserve('t', 'k', 'b', 'd1'), false);
    res.release('t', 'k', 'b');
    assert.equal(res.held('t', 'k')?.callId, 'a');
    res.release('t', 'k', 'a');
    assert.equal(res.held('t', 'k'), undefined);
  });
});
