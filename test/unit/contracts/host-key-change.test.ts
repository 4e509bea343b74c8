/**
 * A change of an SSH target's pinned host key is named precisely in the
 * catalog diff (pinned / changed / unpinned, with the fingerprints); any other
 * change of the target stays `target_changed`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { classifyCatalogChange, parseCatalog } from '../../../src/contracts/index.js';

const A = `SHA256:${'A'.repeat(43)}`;
const B = `SHA256:${'B'.repeat(43)}`;

function catalog(hostKey: string | undefined, port = 22) {
  return parseCatalog(
    stringify({
      targets: { box: { ssh: { host: 'box.example', port, user: 'deploy', credential: 'k', ...(hostKey === undefined ? {} : { host_key: hostKey }) } } },
      tools: { up: { description: 'Uptime.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, ssh: { target: 'box', argv: ['uptime'] } }] } },
    }),
    'catalog.yaml',
  );
}

const reasons = (a: ReturnType<typeof catalog>, b: ReturnType<typeof catalog>) => classifyCatalogChange(a, b).flatMap((c) => c.reasons);

describe('catalog diff: SSH host keys', () => {
  it('untrusted → pinned', () => {
    assert.deepEqual(reasons(catalog(undefined), catalog(A)), [{ code: 'host_key_pinned', text: `target box: host key pinned to ${A}` }]);
  });
  it('pinned → another key', () => {
    assert.deepEqual(reasons(catalog(A), catalog(B)), [{ code: 'host_key_changed', text: `target box: host key changed ${A} → ${B}` }]);
  });
  it('pinned → untrusted', () => {
    assert.equal(reasons(catalog(A), catalog(undefined))[0]?.code, 'host_key_unpinned');
  });
  it('another field changed too → target_changed', () => {
    assert.equal(reasons(catalog(A), catalog(B, 2222))[0]?.code, 'target_changed');
  });
  it('no change → no reasons', () => {
    assert.deepEqual(reasons(catalog(A), catalog(A)), []);
  });
});
