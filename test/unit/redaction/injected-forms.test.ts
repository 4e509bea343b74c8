import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRedactor, injectedForms } from '../../../src/redaction/index.js';
import type { RedactableCredential } from '../../../src/redaction/index.js';

const cred = (kind: RedactableCredential['meta']['kind'], fields: Record<string, string>, secret: Record<string, string>): RedactableCredential => ({
  meta: { name: 'c1', kind, fields },
  secret: Object.fromEntries(Object.entries(secret).map(([k, v]) => [k, Buffer.from(v)])),
});

describe('injectedForms', () => {
  const cases: [string, RedactableCredential, string[]][] = [
    ['http_bearer', cred('http_bearer', {}, { token: 'tk' }), ['tk', 'Bearer tk']],
    ['http_basic', cred('http_basic', { username: 'ann' }, { password: 'pw' }), ['pw', 'ann:pw', `Basic ${Buffer.from('ann:pw').toString('base64')}`]],
    ['http_header', cred('http_header', { header: 'X-Key' }, { value: 'v1' }), ['v1', 'X-Key: v1']],
    ['http_query', cred('http_query', { param: 'api key' }, { value: 'a/b' }), ['a/b', 'api%20key=a%2Fb', 'api key=a%2Fb']],
    ['ssh_key', cred('ssh_key', {}, { private_key: 'KEY', key_passphrase: 'pp' }), ['KEY', 'pp']],
    ['ssh_password', cred('ssh_password', {}, { password: 'pw' }), ['pw']],
  ];
  for (const [kind, c, expected] of cases) {
    it(`lists the secret parts and wire forms of ${kind}, named after the credential`, () => {
      const forms = injectedForms(c);
      assert.deepEqual(forms.map((f) => Buffer.from(f.bytes).toString()).sort(), [...expected].sort());
      assert.ok(forms.every((f) => f.name === 'c1'));
    });
  }

  it('lets a short token be found inside its Bearer header', () => {
    const r = createRedactor(injectedForms(cases[0]![1]));
    assert.equal(r.redactText('got Authorization: Bearer tk'), 'got Authorization: [REDACTED:c1]');
  });
});

describe('injectedForms: SSH key fragments', () => {
  const pem = [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
    'QyNTUxOQAAACBzZWNyZXQtY2FuYXJ5LWtleS1ib2R5LWxpbmUtdHdvAAAAAAAAAAAAAAAA',
    'AAAE',
    '-----END OPENSSH PRIVATE KEY-----',
    '',
  ].join('\n');
  const c = cred('ssh_key', {}, { private_key: pem });
  const r = createRedactor(injectedForms(c));

  it('a printed body line is redacted on its own', () => {
    const line = pem.split('\n')[2]!;
    assert.equal(r.redactText(`remote said ${line} and more`), 'remote said [REDACTED:c1] and more');
  });

  it('the body printed without line breaks is redacted', () => {
    const joined = pem.split('\n').slice(1, 4).join('');
    assert.ok(!r.redactText(`x${joined}y`).includes('c2VjcmV0'));
  });

  it('the armour lines and a short last line are not secrets by themselves', () => {
    const texts = injectedForms(c).map((f) => Buffer.from(f.bytes).toString());
    assert.ok(!texts.includes('-----END OPENSSH PRIVATE KEY-----'));
    assert.ok(!texts.includes('AAAE'));
  });
});
