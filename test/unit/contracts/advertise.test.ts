// What the agent is shown: one schema per tool (the current revision), the
// idempotency key on every non-read tool, annotations from the effect class.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advertiseTool, splitIdempotencyKey } from '../../../src/contracts/index.ts';
import { catalog, objectSchema, str, tool, toolOf } from './helpers.ts';

describe('advertise', () => {
  const rev = { revision: 1, input: objectSchema({ id: str() }, ['id']), http: { target: 'api', method: 'GET', path: '/x/{id}' } };
  const c = catalog({ r: tool([rev], { effect: 'read' }), d: tool([rev], { effect: 'destructive' }) });

  it('a read tool: schema as normalized, read-only hints, no key', () => {
    const a = advertiseTool(toolOf(c, 'r'));
    assert.deepEqual(a.inputSchema, { type: 'object', properties: { id: { type: 'string', maxLength: 200 } }, required: ['id'], additionalProperties: false });
    assert.deepEqual(a.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true });
  });

  it('a destructive tool requires an idempotency key', () => {
    const a = advertiseTool(toolOf(c, 'd'));
    assert.deepEqual(a.inputSchema['required'], ['id', 'idempotency_key']);
    assert.equal(a.annotations.destructiveHint, true);
  });

  it('splitIdempotencyKey', () => {
    assert.deepEqual(splitIdempotencyKey({ id: 'a', idempotency_key: 'key-12345' }), { kind: 'split', key: 'key-12345', args: { id: 'a' } });
    assert.deepEqual(splitIdempotencyKey({ id: 'a' }), { kind: 'split', key: undefined, args: { id: 'a' } });
    assert.equal(splitIdempotencyKey({ idempotency_key: 'short' }).kind, 'invalid_key');
    assert.equal(splitIdempotencyKey({ idempotency_key: 'bad key with spaces' }).kind, 'invalid_key');
  });
});
