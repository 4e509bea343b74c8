// Origin normalization (THREATS row 1 and 6): what the approval card shows is
// what the executor uses. Inputs the URL parser would silently "repair" are
// refused; the rest are normalized to one form; literal private addresses in
// any encoding need allow_private.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyHost, normalizeOrigin, normalizeSshHost } from '../../../src/contracts/index.ts';

describe('normalizeOrigin', () => {
  const ok: [string, 'allowed' | 'refused', string, number][] = [
    ['https://API.Example.COM', 'refused', 'https://api.example.com', 443],
    ['HTTPS://api.example.com:443/', 'refused', 'https://api.example.com', 443],
    ['https://api.example.com:8443', 'refused', 'https://api.example.com:8443', 8443],
    ['https://bücher.de', 'refused', 'https://xn--bcher-kva.de', 443],
    ['https://%65xample.com', 'refused', 'https://example.com', 443],
    ['http://2130706433/', 'allowed', 'http://127.0.0.1', 80],
    ['http://0x7f.1', 'allowed', 'http://127.0.0.1', 80],
    ['http://0177.0.0.1:8080', 'allowed', 'http://127.0.0.1:8080', 8080],
    ['http://[::1]:3000', 'allowed', 'http://[::1]:3000', 3000],
    ['http://localhost:9999', 'allowed', 'http://localhost:9999', 9999],
  ];
  for (const [raw, priv, origin, port] of ok) {
    it(`normalizes ${raw} → ${origin}`, () => {
      const r = normalizeOrigin(raw, priv);
      assert.ok(r.ok, r.ok ? '' : r.problem);
      assert.equal(r.value.origin, origin);
      assert.equal(r.value.port, port);
    });
  }

  const refused: [string, 'allowed' | 'refused', RegExp][] = [
    ['https://a@b.example.com', 'refused', /userinfo/],
    ['https://user:pw@api.example.com', 'allowed', /userinfo/],
    ['https://@api.example.com', 'refused', /userinfo/],
    ['https://api.example.com\\@evil.com', 'refused', /backslash/],
    ['https://evil.com\\api.example.com', 'refused', /backslash/],
    ['https://api.exa\tmple.com', 'refused', /whitespace|control/],
    ['https://api.example.com\n', 'refused', /whitespace|control/],
    [' https://api.example.com', 'refused', /whitespace/],
    ['https://api.example.com.', 'refused', /dot/],
    ['https://api.example.com/v1', 'refused', /no path/],
    ['https://api.example.com?x=1', 'refused', /query/],
    ['https://api.example.com#frag', 'refused', /fragment/],
    ['ftp://api.example.com', 'refused', /scheme ftp/],
    ['http://api.example.com', 'refused', /plain http/],
    ['https://2130706433', 'refused', /127\.0\.0\.1 is loopback/],
    ['https://0x7f.1', 'refused', /loopback/],
    ['https://169.254.169.254', 'refused', /link-local/],
    ['https://10.1.2.3', 'refused', /private/],
    ['https://[::ffff:127.0.0.1]', 'refused', /IPv4-mapped/],
    ['https://[fd00::1]', 'refused', /unique-local/],
    ['https://localhost', 'refused', /localhost/],
    ['https://metadata.google.internal', 'refused', /internal/],
    ['https://api.example.com:0', 'refused', /port 0/],
    ['https://', 'refused', /valid|host/],
  ];
  for (const [raw, priv, problem] of refused) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      const r = normalizeOrigin(raw, priv);
      assert.equal(r.ok, false);
      assert.match(r.ok ? '' : r.problem, problem);
    });
  }
});

describe('classifyHost', () => {
  for (const h of ['8.8.8.8', 'api.github.com', '[2606:4700::1111]']) it(`${h} is public`, () => assert.equal(classifyHost(h).kind, 'public'));
  for (const h of ['0.0.0.0', '100.64.0.1', '172.16.0.1', '192.168.1.1', '198.18.0.1', '224.0.0.1', '[::]', '[fe80::1]', '[64:ff9b::a00:1]', '[2002:a00:1::]'])
    it(`${h} is private`, () => assert.equal(classifyHost(h).kind, 'private'));
});

describe('normalizeSshHost', () => {
  const ok: [string, string][] = [['Preview.Internal', 'preview.internal'], ['::1', '[::1]'], ['[::1]', '[::1]'], ['10.0.0.5', '10.0.0.5'], ['bücher.de', 'xn--bcher-kva.de']];
  for (const [raw, host] of ok) it(`${raw} → ${host}`, () => assert.deepEqual(normalizeSshHost(raw), { ok: true, host }));
  for (const raw of ['root@host', 'host:22', 'host.', '-oProxyCommand=x', 'a b', 'host/x', 'h\\x', ''])
    it(`refuses ${JSON.stringify(raw)}`, () => assert.equal(normalizeSshHost(raw).ok, false));

  it('the allow_private refusal says where the opt-in goes: inside the target\'s http block', () => {
    for (const raw of ['http://api.example.com', 'https://127.0.0.1:8443', 'https://db.internal']) {
      const r = normalizeOrigin(raw, 'refused');
      assert.match(r.ok ? '' : r.problem, /allow_private: true .*inside this target's `http: \{…\}` block, beside `origin:`/, raw);
    }
  });
});
