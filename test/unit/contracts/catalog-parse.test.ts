// Catalog parsing: a corpus of broken files (fixtures/broken, each naming the
// fragments its error must contain: file, document path, line and problem),
// plus the shape of a good catalog.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseCatalog } from '../../../src/contracts/index.ts';
import { isPosternError } from '../../../src/rules/errors.ts';
import { catalogText, KEY, TARGETS } from './helpers.ts';

const dir = join(import.meta.dirname, 'fixtures', 'broken');

describe('broken catalog corpus', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
  it('has a corpus', () => assert.ok(files.length >= 40));
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8');
    const expects = [...text.matchAll(/^# expect: (.*)$/gm)].map((m) => m[1] as string);
    const creds = /^# credentials: (.*)$/m.exec(text)?.[1]?.split(',').map((s) => s.trim());
    it(`${file}: ${expects.join(' / ')}`, () => {
      assert.ok(expects.length > 0, 'fixture names what it expects');
      assert.throws(
        () => parseCatalog(text, file, creds === undefined ? undefined : new Set(creds)),
        (e: unknown) => {
          assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
          const all = (e.details['issues'] as readonly string[]).join('\n');
          assert.ok(e.message.startsWith(`${file}: `), e.message);
          for (const fragment of expects) assert.ok(all.includes(fragment) || e.message.includes(fragment), `expected "${fragment}" in:\n${all}`);
          assert.ok(!e.message.includes('\n'), 'one line');
          return true;
        },
      );
    });
  }
});

describe('parseCatalog, good input', () => {
  it('normalizes targets and keeps revisions in order', () => {
    const c = parseCatalog(
      catalogText({
        t: { description: 'd', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }, http: { target: 'api', method: 'GET', path: '/x/{id}' } }, { revision: 5, input: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }, http: { target: 'api', method: 'GET', path: '/x/{id}' } }] },
      }),
      'c.yaml',
      new Set(['api-token', 'tracker-key', 'deploy-key', 'q-key']),
    );
    assert.deepEqual(c.targets.get('api'), { kind: 'http', name: 'api', origin: 'https://api.example.com', scheme: 'https', host: 'api.example.com', port: 443, credential: 'api-token', auth: { kind: 'bearer' }, idempotencyHeader: 'send', privateNetwork: 'refused' });
    const tracker = c.targets.get('tracker');
    assert.ok(tracker?.kind === 'http');
    assert.deepEqual(tracker.auth, { kind: 'header', name: 'x-api-key' });
    assert.deepEqual(c.targets.get('preview'), { kind: 'ssh', name: 'preview', host: 'preview.internal', port: 22, user: 'deploy', hostKey: { state: 'pinned', fingerprint: KEY }, credential: 'deploy-key' });
    assert.deepEqual(c.tools.get('t')?.revisions.map((r) => r.revision), [1, 5]);
    assert.equal(c.tools.get('t')?.current.revision, 5);
  });

  it('an SSH target without host_key is untrusted; loopback needs allow_private', () => {
    const c = parseCatalog(catalogText({}, { ...TARGETS, local: { http: { origin: 'http://127.0.0.1:8080', credential: 'x', auth: { query: 'key' }, allow_private: true } }, new_box: { ssh: { host: 'NEW.example', user: 'u', credential: 'k' } } }), 'c.yaml');
    const box = c.targets.get('new_box');
    const local = c.targets.get('local');
    assert.ok(box?.kind === 'ssh' && local?.kind === 'http');
    assert.deepEqual([box.host, box.hostKey], ['new.example', { state: 'untrusted' }]);
    assert.equal(local.origin, 'http://127.0.0.1:8080');
  });

  it('refuses an oversized file before parsing it', () => {
    assert.throws(() => parseCatalog(`tools: {}\n# ${'x'.repeat(1_100_000)}\n`, 'big.yaml'), /larger than 1048576 bytes/);
  });
});
