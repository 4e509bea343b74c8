/** The request log numbers entries from 1, freezes them, and appends each as one JSON line. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestLog } from '../../../src/demo/request-log.js';

it('appends, numbers and freezes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-reqlog-'));
  try {
    const file = join(dir, 'requests.jsonl');
    const log = new RequestLog(file);
    const a = log.append({ target: 'http', method: 'GET', path: '/tickets', auth: 'ok', idempotencyKey: null, body: '' });
    log.append({ target: 'ssh', user: 'deploy', argv: ['/srv/deploy.sh'], auth: 'ok' });
    assert.equal(a.seq, 1);
    assert.ok(Object.isFrozen(a));
    assert.deepEqual(log.since(1).map((e) => e.seq), [2]);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number });
    assert.deepEqual(lines.map((l) => l.seq), [1, 2]);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
