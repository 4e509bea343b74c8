/** The channel's building blocks without sockets: frames, proofs and line splitting. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { FrameCodec, LineReader, clientProof, decodeB64u, serverProof, sessionKey, usableKey, type LineEvent } from '../../../src/protocol/operator/crypto.js';

const pair = (): { client: FrameCodec; server: FrameCodec } => {
  const k = randomBytes(32);
  return { client: new FrameCodec(Buffer.from(k), 'client'), server: new FrameCodec(Buffer.from(k), 'server') };
};

describe('FrameCodec', () => {
  it('opens frames in order, in the right direction only', () => {
    const { client, server } = pair();
    const a = client.seal('{"id":1}');
    const b = client.seal('{"id":2}');
    assert.deepEqual(server.open(a), { ok: true, body: '{"id":1}' });
    assert.deepEqual(server.open(b), { ok: true, body: '{"id":2}' });
    const reply = server.seal('{"kind":"x"}');
    assert.deepEqual(client.open(reply), { ok: true, body: '{"kind":"x"}' });
  });

  it('refuses a frame reflected back to its sender', () => {
    const { client, server } = pair();
    const fromServer = server.seal('{"kind":"response"}');
    assert.equal(server.open(fromServer).ok, false);
    assert.equal(client.open(client.seal('x')).ok, false);
  });

  it('refuses altered body, altered seq, and everything after a failure', () => {
    const { client, server } = pair();
    const f = JSON.parse(client.seal('{"op":"deny"}'));
    assert.deepEqual(server.open(JSON.stringify({ ...f, body: '{"op":"approve"}' })), { ok: false, why: 'bad MAC' });
    assert.equal(server.open(JSON.stringify(f)).ok, false, 'the codec stays broken');
    const p = pair();
    const g = JSON.parse(p.client.seal('x'));
    assert.equal(p.server.open(JSON.stringify({ ...g, seq: 1 })).ok, false);
  });

  it('refuses after destroy (the key is zeroed)', () => {
    const { client, server } = pair();
    const f = client.seal('x');
    server.destroy();
    assert.equal(server.open(f).ok, false);
  });
});

describe('handshake derivations', () => {
  it('client proof, server proof and session key are distinct and bound to both nonces and the role', () => {
    const k = randomBytes(32);
    const ns = randomBytes(32);
    const nc = randomBytes(32);
    const all = [clientProof(k, ns, nc, 'operator'), serverProof(k, ns, nc, 'operator'), sessionKey(k, ns, nc, 'operator'), clientProof(k, nc, ns, 'operator'), clientProof(k, ns, randomBytes(32), 'operator'), clientProof(k, ns, nc, 'observer'), sessionKey(k, ns, nc, 'observer')];
    assert.equal(new Set(all.map((b) => b.toString('hex'))).size, all.length);
  });

  it('accepts only canonical 32-byte base64url and usable keys', () => {
    const b = randomBytes(32);
    assert.deepEqual(decodeB64u(b.toString('base64url')), b);
    assert.equal(decodeB64u(b.subarray(0, 31).toString('base64url')), null);
    assert.equal(usableKey(new Uint8Array(32)), false);
    assert.equal(usableKey(new Uint8Array(16).fill(1)), false);
    assert.equal(usableKey(null), false);
    assert.equal(usableKey(new Uint8Array(32).fill(1)), true);
  });
});

describe('LineReader', () => {
  const lines = (evs: Iterable<LineEvent>): string[] => [...evs].map((e) => (e.kind === 'line' ? e.line : `<${e.kind}>`));

  it('joins chunks and multi-byte characters split across them', () => {
    const r = new LineReader(100);
    const bytes = Buffer.from('héllo\nwörld\n', 'utf8');
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...lines(r.push(bytes.subarray(i, i + 1))));
    assert.deepEqual(out, ['héllo', 'wörld']);
  });

  it('bounds an unfinished line and refuses invalid UTF-8', () => {
    assert.deepEqual(lines(new LineReader(4).push(Buffer.from('abcd\n'))), ['abcd']);
    assert.deepEqual(lines(new LineReader(4).push(Buffer.from('abcde'))), ['<too-long>']);
    assert.deepEqual(lines(new LineReader(4).push(Buffer.from([0x61, 0xc3, 0x0a]))), ['<bad-utf8>']);
  });

  it('a limit raised while consuming applies to the next line of the same chunk', () => {
    const r = new LineReader(4);
    const out: string[] = [];
    for (const e of r.push(Buffer.from('ok\nlonger line\n'))) {
      out.push(e.kind === 'line' ? e.line : e.kind);
      r.setLimit(100);
    }
    assert.deepEqual(out, ['ok', 'longer line']);
  });
});
