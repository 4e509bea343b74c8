import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createRedactor, injectedForms, redactionMarker } from '../../../src/redaction/index.js';

const named = (name: string, s: string) => ({ name, bytes: Buffer.from(s, 'utf8') });

describe('redactor', () => {
  const token = 'ghp_R3alT0ken/With+Odd=Chars';
  const r = createRedactor([named('github', token)]);
  const M = '[REDACTED:github]';

  const texts: [string, string][] = [
    ['plain', `token is ${token}.`],
    ['base64', `blob ${Buffer.from(token).toString('base64')} end`],
    ['hex', `h=${Buffer.from(token).toString('hex')}`],
    ['URL-encoded', `?t=${encodeURIComponent(token)}&x=1`],
    ['form-encoded', new URLSearchParams({ t: token, x: '1' }).toString()],
    ['JSON-escaped', JSON.stringify({ t: token })],
    ['inside base64 of a larger document', Buffer.from(`{"auth":"${token}"}`).toString('base64')],
  ];
  for (const [name, text] of texts) {
    it(`redacts the ${name} form`, () => {
      const out = r.redactText(text);
      assert.ok(!out.includes(token));
      assert.ok(out.includes(M), out);
      assert.equal(r.findSecret(out), false);
      assert.equal(r.findSecret(text), true);
    });
  }

  it('keeps text around the secret byte for byte', () => {
    assert.equal(r.redactText(`a ${token} b ${token}`), `a ${M} b ${M}`);
  });

  it('returns text without secrets unchanged', () => {
    const text = 'nothing to see here: ghp_ otherToken';
    assert.equal(r.redactText(text), text);
  });

  it('uses one marker whatever the secret length, and "secret" for unnamed secrets', () => {
    const two = createRedactor([named('a', 'short1'), named('a', 'a-much-longer-secret-value')]);
    assert.equal(two.redactText('short1|a-much-longer-secret-value'), '[REDACTED:a]|[REDACTED:a]');
    assert.equal(createRedactor([Buffer.from('unnamed-secret')]).redactText('x unnamed-secret'), 'x [REDACTED:secret]');
    assert.equal(redactionMarker('Bad Name!'), '[REDACTED:secret]');
  });

  it('redacts overlapping occurrences of several secrets completely', () => {
    const rr = createRedactor([named('a', 'abcdefgh'), named('b', 'efghijkl')]);
    const out = rr.redactText('xxabcdefghijklyy');
    assert.ok(!/abcd|ijkl/.test(out), out);
    assert.equal(rr.findSecret(out), false);
  });

  it('is idempotent, even when a marker borders text that then forms a secret', () => {
    const rr = createRedactor([named('x', ']tail-part')]);
    const once = rr.redactText('a]tail-part [REDACTED:x]tail-part');
    assert.equal(rr.redactText(once), once);
    assert.equal(rr.findSecret(once), false);
  });

  it('matches short secrets (under 4 bytes) only as whole values', () => {
    const rr = createRedactor([named('pin', '123')]);
    assert.equal(rr.redactText('123'), '[REDACTED:pin]');
    assert.equal(rr.redactText(' 123\n'), '[REDACTED:pin]');
    assert.equal(rr.redactText('a1234'), 'a1234');
    assert.deepEqual(rr.redactValue({ pin: 123, s: 'x123', list: ['123'] }), { pin: '[REDACTED:pin]', s: 'x123', list: ['[REDACTED:pin]'] });
  });

  it('redacts deep values: strings, keys, numbers, bytes; keeps structure', () => {
    const rr = createRedactor([named('n', '987654321'), named('t', token)]);
    const input = {
      a: [1, 'x', { [token]: `pre ${token}` }],
      num: 987654321,
      big: 987654321n,
      bytes: Buffer.from(`..${token}..`),
      ok: true,
      nil: null,
    };
    const out = rr.redactValue(input) as Record<string, unknown>;
    assert.deepEqual(out['a'], [1, 'x', { '[REDACTED:t]': 'pre [REDACTED:t]' }]);
    assert.equal(out['num'], '[REDACTED:n]');
    assert.equal(out['big'], '[REDACTED:n]');
    assert.equal(out['bytes'], '[REDACTED:t]');
    assert.equal(out['ok'], true);
    assert.equal(out['nil'], null);
    assert.equal(rr.findSecret(out), false);
    assert.equal(rr.findSecret(input), true);
  });

  it('keeps a "__proto__" key a plain key and survives cycles', () => {
    const input = JSON.parse(`{"__proto__": {"k": "${token}"}}`) as Record<string, unknown>;
    const out = r.redactValue(input) as Record<string, unknown>;
    assert.ok(Object.hasOwn(out, '__proto__'));
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    const cyclic: Record<string, unknown> = { s: token };
    cyclic['self'] = cyclic;
    const c = r.redactValue(cyclic) as Record<string, unknown>;
    assert.equal(c['s'], M);
    assert.equal(c['self'], c);
    assert.equal(r.findSecret(cyclic), true);
  });

  it('recognizes the derived forms an executor injects (Basic auth)', () => {
    const cred = { meta: { name: 'svc', kind: 'http_basic' as const, fields: { username: 'bob' } }, secret: { password: Buffer.from('pw') } };
    const rr = createRedactor(injectedForms(cred));
    const header = `Basic ${Buffer.from('bob:pw').toString('base64')}`;
    assert.equal(rr.redactText(`authorization: ${header}`), 'authorization: [REDACTED:svc]');
    assert.equal(rr.findSecret({ h: header }), true);
  });

  // Speed is measured by `npm run bench` (scripts/bench/redaction.ts), not here.
  it('finds a secret in 1 MiB of text among 48 secrets', () => {
    const secrets = Array.from({ length: 48 }, (_, i) => named(`c${i}`, `${randomBytes(18).toString('base64')}/+é"`));
    const rr = createRedactor(secrets);
    const filler = randomBytes(800 * 1024).toString('base64').slice(0, 1024 * 1024);
    const hit = secrets[7]?.bytes ?? Buffer.alloc(0);
    const text = `${filler.slice(0, 1000)}${Buffer.from(hit).toString('hex')}${filler.slice(1000)}`;
    const out = rr.redactText(text);
    assert.ok(out.includes('[REDACTED:c7]'));
    assert.ok(!out.includes(Buffer.from(hit).toString('hex')));
  });

  it('walks values nested far deeper than the call stack allows (a target\'s JSON 50,000 deep)', () => {
    for (const depth of [5_000, 50_000]) {
      const deep = JSON.parse(`${'['.repeat(depth)}{"k":"${token}"}${']'.repeat(depth)}`) as unknown;
      assert.equal(r.findSecret(deep), true);
      let v = r.redactValue(deep);
      for (let i = 0; i < depth; i++) v = (v as unknown[])[0];
      assert.deepEqual(v, { k: M });
      assert.equal(r.findSecret(r.redactValue(deep)), false);
    }
  });
});
