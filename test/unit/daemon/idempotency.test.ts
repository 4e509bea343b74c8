/** The idempotency decision as a table (DESIGN §6.5). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideIdempotency, KeyReservations } from '../../../src/daemon/pipeline/idempotency.js';
import type { IdempotencyRecord } from '../../../src/journal/index.js';

const holder = (state: IdempotencyRecord['state'], args_digest = 'd1'): IdempotencyRecord => ({ call_id: 'c1', tool: 't', key: 'k', args_digest, state, session_id: 's' });

describe('decideIdempotency', () => {
  const rows: [string, IdempotencyRecord | undefined, { callId: string; argsDigest: string } | undefined, string][] = [
    ['fresh key', undefined, undefined, 'proceed'],
    ['in flight here, same arguments', undefined, { callId: 'c0', argsDigest: 'd1' }, 'in_progress'],
    ['in flight here, other arguments', undefined, { callId: 'c0', argsDigest: 'd2' }, 'conflict'],
    ['completed, same arguments', holder('completed'), undefined, 'replay'],
    ['completed, other arguments', holder('completed', 'd2'), undefined, 'conflict'],
    ['journaled in progress', holder('in_progress'), undefined, 'in_progress'],
    ['outcome unknown after a crash', holder('outcome_unknown'), undefined, 'outcome_unknown'],
    ['outcome unknown, other arguments', holder('outcome_unknown', 'd2'), undefined, 'conflict'],
  ];
  for (const [name, h, r, expected] of rows) {
    it(name, () => assert.equal(decideIdempotency(h, r, 'd1').kind, expected));
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
