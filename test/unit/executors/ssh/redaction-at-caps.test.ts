/**
 * Class 4 through the real SSH executor (in-process server, real `/bin/sh`)
 * and the daemon's result shaping: a secret the remote prints just before
 * the stdout or stderr cap leaks none of its characters at any offset, and
 * `base64 KEYFILE` (76-column output) has the whole private key redacted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseCatalog, type Revision } from '../../../../src/contracts/index.js';
import { shapeResult } from '../../../../src/daemon/pipeline/stages/outcome/result.js';
import type { Trail } from '../../../../src/daemon/pipeline/trail.js';
import { executeSsh, type SshCredential, type SshResult } from '../../../../src/executors/ssh/index.js';
import { createRedactor, injectedForms } from '../../../../src/redaction/index.js';
import type { TestSshServer } from './support.js';
import { action, CLIENT_KEY, keyCredential, PASSWORD, passwordCredential, startSshServer } from './support.js';

const trail = { callId: 'call-1', currentRevision: 1 } as unknown as Trail;

function revision(): Revision {
  const text = stringify({
    targets: { box: { ssh: { host: 'box.example', port: 22, user: 'deploy', credential: 'k', host_key: `SHA256:${'A'.repeat(43)}` } } },
    tools: { run: { description: 'Run.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, ssh: { target: 'box', argv: ['true'] } }] } },
  });
  return parseCatalog(text, 'catalog.yaml').tools.get('run')!.current;
}

async function agentSees(srv: TestSshServer, cred: SshCredential, argv: string[], maxOutputBytes?: number): Promise<{ raw: SshResult; facts: Record<string, unknown> }> {
  const redactor = createRedactor(injectedForms(cred));
  const raw = await executeSsh(action(srv, argv), cred, { readPastCapBytes: redactor.readPastCapBytes, ...(maxOutputBytes === undefined ? {} : { maxOutputBytes }) });
  const shaped = shapeResult({ kind: 'ssh', result: raw }, revision(), redactor, trail);
  const facts = shaped.result.structuredContent as Record<string, unknown>;
  assert.equal(redactor.findSecret(shaped.result), false);
  return { raw, facts };
}

describe('ssh output caps and redaction', () => {
  let srv: TestSshServer;
  let dir: string;
  before(async () => {
    srv = await startSshServer();
    dir = mkdtempSync(join(tmpdir(), 'postern-sshcap-'));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await srv.close();
  });

  for (const stream of ['stdout', 'stderr'] as const) {
    it(`a password printed across the ${stream} cap, offset by offset, leaks nothing`, async () => {
      const cap = 2048;
      const redirect = stream === 'stderr' ? ' >&2' : '';
      const leaked = new Set<string>();
      for (let pad = cap - PASSWORD.length - 1; pad <= cap + 1; pad++) {
        // The pad, the password, then more than the read-past margin.
        const script = `head -c ${pad} /dev/zero | tr '\\0' .${redirect}; printf %s "$1"${redirect}; head -c 100000 /dev/zero | tr '\\0' .${redirect}`;
        const { raw, facts } = await agentSees(srv, passwordCredential(), ['sh', '-c', script, 'sh', PASSWORD], cap);
        assert.equal(raw[`${stream}_truncated`], true);
        assert.equal(facts[`${stream}_truncated`], true);
        const out = String(facts[stream]);
        // A marker may be longer than the secret it replaces: the cap bounds what was read, not the marker.
        assert.ok(out.length <= cap + '[REDACTED:deploy-pw]'.length, `${pad}: ${out.length}`);
        const tail = out.replace(/^\.*/, '').replace(/\.*$/, '');
        if (tail !== '' && tail !== '[REDACTED:deploy-pw]') leaked.add(tail);
      }
      assert.deepEqual([...leaked], []);
    });
  }

  it('a password printed one character per write is redacted as a whole', async () => {
    const script = `printf 'pw='; for c in $(printf %s "$1" | fold -w1); do printf %s "$c"; done; echo`;
    const { facts } = await agentSees(srv, passwordCredential(), ['sh', '-c', script, 'sh', PASSWORD]);
    assert.equal(facts['stdout'], 'pw=[REDACTED:deploy-pw]\n');
  });

  it('base64 KEYFILE (76 columns) has the whole private key redacted', async () => {
    const file = join(dir, 'id_ed25519');
    writeFileSync(file, CLIENT_KEY.private);
    const { raw, facts } = await agentSees(srv, keyCredential(), ['base64', file]);
    assert.match(raw.stdout, /^[A-Za-z0-9+/=]{76}\n/, 'the remote really wrapped at 76 columns');
    const out = String(facts['stdout']);
    assert.ok(out.includes('[REDACTED:deploy-key]'), out);
    const left = out.replace(/\[REDACTED:deploy-key\]/g, '').replace(/\s/g, '');
    assert.ok(left.length <= 8, `left ${JSON.stringify(left)}`);
  });

  it('base64 -w 64 and xxd -p of the key file are redacted too', async () => {
    const file = join(dir, 'id_ed25519');
    writeFileSync(file, CLIENT_KEY.private);
    for (const argv of [
      ['base64', '-w', '64', file],
      ['od', '-An', '-tx1', '-v', file],
    ]) {
      const { facts } = await agentSees(srv, keyCredential(), argv);
      const left = String(facts['stdout']).replace(/\[REDACTED:deploy-key\]/g, '').replace(/\s/g, '');
      assert.ok(left.length <= 8, `${argv.join(' ')} left ${JSON.stringify(left)}`);
    }
  });
});
