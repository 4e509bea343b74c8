// The shim's hello: what it declares it relayed is bounded and validated, all or nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeHello, HELLO_MAX_BYTES, listingOf, MAX_RELAYED, parseHello } from '../../../src/protocol/shim-hello.ts';

const line = (s: string): Buffer => Buffer.from(s.replace(/\n$/, ''), 'utf8');

describe('shim hello', () => {
  it('round-trips the pid and the relayed listing', () => {
    const h = parseHello(line(encodeHello(42, { toolset: 'abc123', revisions: new Map([['create_issue', 2], ['get.x', 7]]) })));
    assert.equal(h?.pid, 42);
    assert.equal(h?.relayed?.toolset, 'abc123');
    assert.deepEqual([...(h?.relayed?.revisions ?? [])], [['create_issue', 2], ['get.x', 7]]);
  });

  it('a first hello declares nothing', () => {
    assert.deepEqual(parseHello(line(encodeHello(1, null))), { pid: 1, relayed: null });
  });

  it('anything invalid in relayed drops all of it (never half-trusted), the pid stays', () => {
    for (const relayed of [
      { toolset: 'ok', revisions: { 'bad name': 1 } },
      { toolset: 'ok', revisions: { a: 0 } },
      { toolset: 'ok', revisions: { a: 1.5 } },
      { toolset: 'ok', revisions: { a: '1' } },
      { toolset: 'bad toolset!', revisions: {} },
      { toolset: 'ok', revisions: [] },
      { toolset: 'ok', revisions: Object.fromEntries(Array.from({ length: MAX_RELAYED + 1 }, (_, i) => [`t${i}`, 1])) },
    ]) {
      const h = parseHello(line(JSON.stringify({ postern_shim: 1, pid: 5, relayed })));
      assert.deepEqual(h, { pid: 5, relayed: null }, JSON.stringify(relayed).slice(0, 80));
    }
  });

  it('not a hello: MCP traffic, other markers, oversized lines', () => {
    assert.equal(parseHello(line('{"jsonrpc":"2.0","id":1,"method":"initialize"}')), null);
    assert.equal(parseHello(line('{"postern_shim":2}')), null);
    assert.equal(parseHello(Buffer.alloc(HELLO_MAX_BYTES, 0x20)), null);
  });

  it('a listing too large to declare is left out of the hello', () => {
    const revisions = new Map(Array.from({ length: MAX_RELAYED + 1 }, (_, i) => [`t${i}`, 1] as [string, number]));
    assert.deepEqual(parseHello(line(encodeHello(3, { toolset: 'x', revisions }))), { pid: 3, relayed: null });
  });

  it('reads a daemon tools/list result; a paginated page is not taken as the full list', () => {
    const result = { tools: [{ name: 'a', _meta: { 'dev.postern/revision': 3, 'dev.postern/toolset': 'ts1' } }, { name: 'postern_call_status', _meta: { 'dev.postern/toolset': 'ts1' } }] };
    const l = listingOf(result);
    assert.equal(l?.toolset, 'ts1');
    assert.deepEqual([...(l?.revisions ?? [])], [['a', 3]]);
    assert.equal(listingOf({ ...result, nextCursor: 'p2' }), null);
    assert.equal(listingOf({ nope: 1 }), null);
  });
});
