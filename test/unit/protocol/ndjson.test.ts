/**
 * The one NDJSON framing (protocol/ndjson.ts) and the one size rule
 * (protocol/agent-limits.ts): lines survive any chunking, an oversized line is
 * reported by its edges and the stream goes on, arguments the pipeline would
 * admit always fit on the wire, and an oversized line is answered as the
 * pipeline would answer it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FrameSplitter, lineSplitter, type Oversized } from '../../../src/protocol/ndjson.js';
import { agentLineLimit, DEFAULT_MAX_REQUEST_BYTES, MAX_REQUEST_BYTES_CEILING, oversizedAnswer, SHIM_LINE_LIMIT } from '../../../src/protocol/agent-limits.js';
import { parseConfig } from '../../../src/daemon/services/config.js';

function split(limit: number, chunks: Buffer[]): { lines: string[]; oversized: Oversized[] } {
  const lines: string[] = [];
  const oversized: Oversized[] = [];
  const feed = lineSplitter(limit, (l) => lines.push(l.toString('utf8')), (o) => oversized.push(o));
  for (const c of chunks) feed(c);
  return { lines, oversized };
}

describe('NDJSON framing', () => {
  it('any chunking gives the same lines, multi-byte characters intact, blank lines skipped', () => {
    const bytes = Buffer.from('{"a":"é€𝄞"}\n\n  \n{"b":1}\n', 'utf8');
    for (const size of [1, 2, 3, 5, 7, bytes.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      assert.deepEqual(split(100, chunks).lines, ['{"a":"é€𝄞"}', '{"b":1}'], `chunks of ${size}`);
    }
  });

  it('an oversized line is reported once by its edges and the next line is read', () => {
    const big = `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"t","arguments":{"q":"${'x'.repeat(5000)}"}}}`;
    const chunks = [Buffer.from(big.slice(0, 1000)), Buffer.from(big.slice(1000)), Buffer.from('\n{"ok":1}\n')];
    const { lines, oversized } = split(1024, chunks);
    assert.deepEqual(lines, ['{"ok":1}']);
    assert.equal(oversized.length, 1);
    assert.ok(oversized[0]!.head.startsWith('{"jsonrpc"'));
    assert.ok(oversized[0]!.tail.endsWith('}}}'));
  });

  it('overflow is signalled as soon as the limit is passed, before the line ends', () => {
    const f = new FrameSplitter(4);
    assert.deepEqual([...f.push(Buffer.from('abcde'))].map((e) => e.kind), ['overflow']);
    assert.deepEqual([...f.push(Buffer.from('fg\nok\n'))].map((e) => e.kind), ['oversized', 'line']);
  });
});

describe('the one size rule', () => {
  it('arguments of max_request_bytes fit on the wire even with every character escaped', () => {
    for (const max of [1024, DEFAULT_MAX_REQUEST_BYTES, MAX_REQUEST_BYTES_CEILING]) {
      const q = 'a'.repeat(max - '{"q":""}'.length);
      assert.equal(Buffer.byteLength(JSON.stringify({ q })), max);
      const escaped = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${'n'.repeat(64)}","arguments":{"q":"${q.replace(/a/g, '\\u0061')}"},"_meta":{"progressToken":"p"}}}`;
      assert.ok(Buffer.byteLength(escaped) <= agentLineLimit(max), `max ${max}`);
    }
    assert.equal(SHIM_LINE_LIMIT, agentLineLimit(MAX_REQUEST_BYTES_CEILING), 'the shim forwards anything the daemon could be configured to accept');
  });

  it('the configuration cannot set a limit the transports do not carry', () => {
    assert.equal(parseConfig('', 'config.yaml').max_request_bytes, DEFAULT_MAX_REQUEST_BYTES);
    assert.equal(parseConfig(`max_request_bytes: ${MAX_REQUEST_BYTES_CEILING}`, 'config.yaml').max_request_bytes, MAX_REQUEST_BYTES_CEILING);
    assert.throws(() => parseConfig(`max_request_bytes: ${MAX_REQUEST_BYTES_CEILING + 1}`, 'config.yaml'), /max_request_bytes/);
  });

  it('an oversized tools/call is REQUEST_TOO_LARGE (in its era); anything else is -32600; no id, no answer', () => {
    const call = oversizedAnswer({ head: '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"q":"xxxx', tail: 'xxxx"}}}' }, 100);
    const result = call?.['result'] as Record<string, unknown>;
    assert.equal(call?.['id'], 7);
    assert.equal(result['isError'], true);
    assert.equal((result['structuredContent'] as Record<string, unknown>)['error_code'], 'REQUEST_TOO_LARGE');
    assert.equal((result['structuredContent'] as Record<string, unknown>)['side_effect_started'], false);
    assert.equal(result['resultType'], undefined);
    const modern = oversizedAnswer({ head: '{"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"q":"xx', tail: 'xx"}},"jsonrpc":"2.0","id":"m"}' }, 100);
    assert.equal((modern?.['result'] as Record<string, unknown>)['resultType'], 'complete');
    const other = oversizedAnswer({ head: '{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"cursor":"xx', tail: 'xx"}}' }, 100);
    assert.equal((other?.['error'] as Record<string, unknown>)['code'], -32600);
    assert.equal(oversizedAnswer({ head: '{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"xx', tail: 'xx"}}' }, 100), null);
  });
});
