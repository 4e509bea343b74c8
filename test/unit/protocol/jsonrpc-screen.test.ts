/**
 * The JSON-RPC envelope screen, as a table: what the SDK would drop is
 * answered (-32602 for a well-formed request with bad params, -32600 for a
 * malformed request), notifications are never answered, and everything well
 * formed passes. The e2e proof is test/e2e/agent-envelope.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { screenBytes, screenMessage } from '../../../src/protocol/jsonrpc-screen.js';

const rows: [string, unknown, 'pass' | 'drop' | number, (string | number | null)?][] = [
  ['a well-formed call', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: {} } }, 'pass'],
  ['params absent', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'pass'],
  ['a response', { jsonrpc: '2.0', id: 3, result: {} }, 'pass'],
  ['an error response with id null', { jsonrpc: '2.0', id: null, error: { code: -1, message: 'x' } }, 'pass'],
  ['a notification', { jsonrpc: '2.0', method: 'notifications/initialized' }, 'pass'],
  ['params an array', { jsonrpc: '2.0', id: 'a', method: 'tools/list', params: [] }, -32602, 'a'],
  ['params null', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: null }, -32602, 2],
  ['params a string', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: 'x' }, -32602, 2],
  ['params a number', { jsonrpc: '2.0', id: 2, method: 'tools/list', params: 0 }, -32602, 2],
  ['params false', { jsonrpc: '2.0', id: 2, method: 'tools/list', params: false }, -32602, 2],
  ['_meta an array', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't', _meta: [] } }, -32602, 2],
  ['_meta a string', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't', _meta: 's' } }, -32602, 2],
  ['progress token null', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't', _meta: { progressToken: null } } }, -32602, 2],
  ['id null', { jsonrpc: '2.0', id: null, method: 'tools/list' }, -32600, null],
  ['id an array', { jsonrpc: '2.0', id: [1], method: 'tools/list' }, -32600, null],
  ['id fractional', { jsonrpc: '2.0', id: 0.5, method: 'ping' }, -32600, null],
  ['id beyond safe integers', { jsonrpc: '2.0', id: 2 ** 60, method: 'ping' }, -32600, null],
  ['no jsonrpc', { id: 4, method: 'ping' }, -32600, 4],
  ['method an object', { jsonrpc: '2.0', id: 4, method: {} }, -32600, 4],
  ['neither method nor result', { jsonrpc: '2.0', id: 4 }, -32600, 4],
  ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'ping' }], -32600, null],
  ['a string', 'tools/list', -32600, null],
  ['null', null, -32600, null],
  ['tools/call without params', { jsonrpc: '2.0', id: 5, method: 'tools/call' }, -32602, 5],
  ['tools/call without a name', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { arguments: {} } }, -32602, 5],
  ['tools/call, name a number', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 5 } }, -32602, 5],
  ['tools/call, arguments an array', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 't', arguments: [] } }, -32602, 5],
  ['tools/call, arguments null', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 't', arguments: null } }, -32602, 5],
  ['tools/call, arguments absent', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 't' } }, 'pass'],
  ['a notification with params null', { jsonrpc: '2.0', method: 'notifications/cancelled', params: null }, 'drop'],
  ['a notification with a bad method', { jsonrpc: '2.0', method: 5 }, 'drop'],
];

describe('JSON-RPC envelope screen', () => {
  for (const [what, msg, want, id] of rows) {
    it(what, () => {
      const v = screenMessage(msg);
      if (want === 'pass' || want === 'drop') return assert.equal(v.kind, want, JSON.stringify(v));
      assert.equal(v.kind, 'answer');
      if (v.kind !== 'answer') return;
      assert.equal(v.response['id'], id);
      assert.equal((v.response['error'] as { code: number }).code, want);
    });
  }
});

describe('bytes that are not a message: -32700, daemon or no daemon', () => {
  const parse = (bytes: Buffer): { id: unknown; code: unknown } => {
    const v = screenBytes(bytes);
    assert.equal(v.kind, 'answer', JSON.stringify(v));
    const r = v.kind === 'answer' ? v.response : {};
    return { id: r['id'], code: (r['error'] as { code?: number } | undefined)?.code };
  };
  it('malformed JSON: id null', () => assert.deepEqual(parse(Buffer.from('{"jsonrpc":"2.0","id":1,')), { id: null, code: -32700 }));
  it('invalid UTF-8: the id a lenient reading finds, never run as U+FFFD', () => {
    const bytes = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"t","arguments":{"q":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}}')]);
    assert.deepEqual(parse(bytes), { id: 'u', code: -32700 });
  });
  it('a well-formed message passes, parsed', () => {
    const v = screenBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}'));
    assert.deepEqual(v, { kind: 'pass', message: { jsonrpc: '2.0', id: 1, method: 'ping' } });
  });
});
