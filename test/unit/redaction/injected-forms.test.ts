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
