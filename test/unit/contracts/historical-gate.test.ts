// Seed 004's operating rule ("si un log histórico de llamadas válidas podría
// fallar contra el schema nuevo, es breaking") on tools with effects: the
// journal records raw arguments with the reserved idempotency_key, and the gate
// revalidates what the pipeline validates — the arguments without it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { releaseGate, type HistoryRecord } from '../../../src/contracts/index.ts';
import { catalog, objectSchema, str, tool } from './helpers.ts';

const rev = (n: number, pedido: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  revision: n,
  input: objectSchema({ pedido_id: str(pedido) }, ['pedido_id']),
  http: { target: 'api', method: 'POST', path: '/pedidos', body: { id: '{pedido_id}' } },
  ...extra,
});
const old = catalog({ crear_pedido: tool([rev(1, {})]) });
const tightened = catalog({ crear_pedido: tool([rev(1, {}), rev(2, { pattern: '^P-' }, { previous: 'adapt' })]) });
const K = 'key-0123456789';

describe('historical gate on write tools', () => {
  it('journaled arguments carrying idempotency_key are revalidated, not skipped as already invalid', () => {
    const history: HistoryRecord[] = [
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-1', idempotency_key: K } },
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: '77', idempotency_key: K } },
    ];
    const report = releaseGate(old, tightened, history);
    assert.equal(report.historical.checked, 2);
    assert.equal(report.historical.passed, 1);
    assert.equal(report.historical.skippedInvalid, 0);
    assert.deepEqual(report.historicalFailures.map((f) => f.index), [1]);
    assert.ok(report.failures.some((f) => f.rule === 'historical_call_fails'));
  });

  it('the same journal passes against an unchanged candidate: the key is not an unknown field', () => {
    const report = releaseGate(old, old, [{ tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: '77', idempotency_key: K } }]);
    assert.deepEqual([report.ok, report.historical.passed], [true, 1]);
  });

  it('what is not revalidated is counted by reason', () => {
    const history: HistoryRecord[] = [
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-1', idempotency_key: 'bad key!' } },
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-1', colour: 'red', idempotency_key: K } },
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-1' }, error_code: 'VALIDATION_FAILED' },
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-1' }, error_code: 'IDEMPOTENCY_KEY_REQUIRED' },
      { tool: 'postern_call_status', raw_arguments: { call_id: 'x' } },
      { tool: 'crear_pedido', revision: 1, raw_arguments: { pedido_id: 'P-2', idempotency_key: K }, error_code: 'APPROVAL_DENIED' },
    ];
    const report = releaseGate(old, tightened, history);
    assert.deepEqual(report.historical.skipped, { never_valid: 2, built_in: 1, invalid_key: 1, invalid_before: 1 });
    assert.equal(report.historical.skippedInvalid, 5);
    assert.equal(report.historical.passed, 1, 'a denied call was valid: it is revalidated');
    assert.deepEqual(report.historicalFailures, []);
  });
});
