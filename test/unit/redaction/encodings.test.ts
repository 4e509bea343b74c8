import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MIN_SUBSTRING_BYTES, secretForms } from '../../../src/redaction/index.js';

const bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');

describe('secret forms', () => {
  const secret = 'p@ss/wörd+1 "x"';
  const forms = secretForms(bytes(secret)).substrings;
  const cases: [string, string][] = [
    ['UTF-8 text', secret],
    ['base64', Buffer.from(secret).toString('base64')],
    ['base64 without padding', Buffer.from(secret).toString('base64').replace(/=+$/, '')],
    ['base64url', Buffer.from(secret).toString('base64url')],
    ['hex', Buffer.from(secret).toString('hex')],
    ['HEX', Buffer.from(secret).toString('hex').toUpperCase()],
    ['encodeURIComponent', encodeURIComponent(secret)],
    ['encodeURIComponent, lower-case escapes', encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ['form encoding (URLSearchParams)', new URLSearchParams({ x: secret }).toString().slice(2)],
    ['encodeURI', encodeURI(secret)],
    ['JSON string', JSON.stringify(secret).slice(1, -1)],
    ['JSON with escaped slash', JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/')],
    ['JSON, ASCII only', '"p@ss/w\\u00f6rd+1 \\"x\\""'.slice(1, -1)],
    ['HTML', 'p@ss/wörd+1 &quot;x&quot;'],
  ];
  for (const [name, form] of cases) {
    it(`includes the ${name} form`, () => assert.ok(forms.includes(form), form));
  }

  it('finds base64 cores at every byte offset inside a longer base64 stream', () => {
    const s = bytes('0123456789abcdef');
    const subs = secretForms(s).substrings;
    for (let k = 0; k < 3; k++) {
      const stream = Buffer.concat([Buffer.alloc(k, 0x7a), s, Buffer.from('tail')]).toString('base64');
      assert.ok(subs.some((f) => f.length >= 8 && stream.includes(f)), `offset ${k}`);
    }
  });

  it('matches lines of a multi-line secret (PEM) but not its armour', () => {
    const pem = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n';
    const subs = secretForms(bytes(pem)).substrings;
    assert.ok(subs.includes('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ'));
    assert.ok(subs.includes(pem.replace(/\n/g, '\r\n')));
    assert.ok(!subs.includes('-----BEGIN OPENSSH PRIVATE KEY-----'));
  });

  it(`matches secrets shorter than ${MIN_SUBSTRING_BYTES} bytes only as whole values`, () => {
    const f = secretForms(bytes('a/b'));
    assert.deepEqual(f.substrings, []);
    assert.ok(f.wholeValues.includes('a/b'));
    assert.ok(f.wholeValues.includes('a%2Fb'));
    assert.ok(f.wholeValues.includes(Buffer.from('a/b').toString('base64')));
  });

  it('handles bytes that are not UTF-8 (no text form, byte encodings kept)', () => {
    const raw = Uint8Array.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
    const subs = secretForms(raw).substrings;
    assert.ok(subs.includes('fffe008041'));
    assert.ok(subs.includes('%FF%FE%00%80A'));
    assert.ok(subs.includes(Buffer.from(raw).toString('base64')));
  });

  it('has no forms for an empty secret', () => {
    assert.deepEqual(secretForms(new Uint8Array()), { substrings: [], wholeValues: [], viewForms: [], hexForms: [] });
  });
});
