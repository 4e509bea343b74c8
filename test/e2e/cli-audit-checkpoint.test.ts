/**
 * `postern audit checkpoint` (issue 25 §7): right after calls, `audit export
 * --bundle` has nothing signed to prove them with and says how to sign one;
 * `audit checkpoint` asks the running daemon over the operator channel, and
 * the bundle is then written and verifies. Without a daemon the command signs
 * one itself with the passphrase. The token is a canary.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';

const TOKEN = canary('checkpoint');
const note = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
type Signed = { at: string; reason: string; activity_seq: number; sessions_seq: number; key: string };

describe('audit checkpoint', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  const pass = (): string[] => ['--passphrase-file', inst.passFile];

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, tools: { notes_write: { description: 'A write.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: note, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }] } } }));
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('signs one through the running daemon, so calls just made can be exported and verified', async () => {
    const r = await agent.callTool({ name: 'notes_write', arguments: { title: 'now', idempotency_key: `key-${randomBytes(6).toString('hex')}` } });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const early = await inst.sb.run(['audit', 'export', '--bundle', join(inst.sb.dir, 'early.bundle')]);
    assert.equal(early.code, 1);
    assert.match(early.stderr, /^postern: JOURNAL_UNAVAILABLE: .*nothing can be proven yet: sign one now with `postern audit checkpoint`/m);

    const cp = await inst.sb.run(['audit', 'checkpoint', '--json', ...pass()]);
    assert.equal(cp.code, 0, cp.stderr);
    const signed = JSON.parse(cp.stdout) as Signed;
    assert.equal(signed.reason, 'operator');
    assert.match(signed.key, /^SHA256:/);
    const file = join(inst.sb.dir, 'now.bundle');
    const e = await inst.sb.run(['audit', 'export', '--bundle', file]);
    assert.equal(e.code, 0, e.stdout + e.stderr);
    const v = await inst.sb.run(['audit', 'verify', '--bundle', file]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match((await inst.sb.run(['audit', 'checkpoint', ...pass()])).stdout, /^signed a checkpoint at \S+ \(operator\)\n {2}covers activity up to seq \d+, sessions up to seq \d+\n {2}key SHA256:/m);
  });

  it('without a daemon, signs one with the passphrase', async () => {
    await agent.close();
    assert.equal(await inst.stopDaemon(), 0);
    const cp = await inst.sb.run(['audit', 'checkpoint', '--json', ...pass()]);
    assert.equal(cp.code, 0, cp.stderr);
    assert.equal((JSON.parse(cp.stdout) as Signed).reason, 'operator');
    const v = await inst.sb.run(['audit', 'verify']);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match(v.stdout, /^checkpoint: ok: journal matches checkpoint #\d+ \(operator, /m);
  });
});
