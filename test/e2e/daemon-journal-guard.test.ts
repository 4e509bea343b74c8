/**
 * The journal guard end to end (THREATS 9, 15; docs/audit.md "What the vault
 * and the checkpoints add"): the built CLI and the real daemon, a loopback
 * HTTP service whose request log shows whether a completed key ever ran
 * again. (a) The journal directory, journal.anchor and the checkpoint file
 * deleted together: the vault records that this home keeps a journal, so the
 * start is refused, not taken for a new home. (b) An older journal put back
 * WITH its anchor: the daemon judges the signed checkpoints at start, as
 * `audit verify --unlock` does, and refuses; nothing is signed again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, writeTool } from '../helpers/fixture.js';

const TOKEN = canary('guard');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const newKey = (): string => `key-${randomBytes(8).toString('hex')}`;

describe('daemon: the journal guard', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let home: string;
  const done = newKey();
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;
  const call = async (args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name: 'quick_write', arguments: args })) as Result;
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  const files = ['journal', 'journal.anchor', 'journal.checkpoints.jsonl'] as const;
  const snap = (name: string): void => {
    for (const f of files) cpSync(join(home, f), join(inst.sb.dir, `snap-${name}`, f), { recursive: true });
  };
  const restore = (name: string, what: readonly (typeof files)[number][]): void => {
    for (const f of what) {
      rmSync(join(home, f), { recursive: true, force: true });
      cpSync(join(inst.sb.dir, `snap-${name}`, f), join(home, f), { recursive: true });
    }
  };
  const refusedStart = async (message: RegExp): Promise<void> => {
    const before = http.requests.length;
    await assert.rejects(inst.startDaemon(), (e: Error) => {
      assert.match(e.message, /daemon exited 1: [^]*postern: JOURNAL_ANCHOR_MISMATCH: /);
      assert.match(e.message, message);
      assert.match(e.message, /postern anchor new-journal/);
      return true;
    });
    inst.daemon = null;
    assert.equal(http.requests.length, before, 'nothing reached the target');
  };

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, target: { idempotency_header: true }, tools: { quick_write: writeTool('/echo', 'A write.') } }));
    home = inst.sb.home;
    agent = await inst.client();
    assert.equal((await call({ title: 'done', idempotency_key: done })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    snap('good');
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('(a) journal, anchor and checkpoints deleted together → refused, not a new home; the completed key never runs again', async () => {
    for (const f of files) rmSync(join(home, f), { recursive: true, force: true });
    await refusedStart(/the journal, its anchor and its checkpoints are gone, but the vault records journal [0-9a-f-]+: they were removed, this is not a new home/);
    assert.ok(!existsSync(join(home, 'journal.anchor')), 'the refused start wrote no anchor');
    const doctor = await inst.sb.run(['doctor', '--unlock', '--json', ...pass()]);
    assert.doesNotMatch(doctor.stdout + doctor.stderr, new RegExp(TOKEN));
    restore('good', files);
    await inst.startDaemon();
    const r = await call({ title: 'done', idempotency_key: done });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(done), 1, 'the completed key ran once, ever');
    assert.equal(await inst.stopDaemon(), 0);
  });

  it('(b) an older journal put back WITH its anchor → refused at start by the checkpoints; no counter is signed twice; verify keeps saying it', async () => {
    await inst.startDaemon();
    const later = newKey();
    assert.equal((await call({ title: 'later', idempotency_key: later })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    snap('later');
    restore('good', ['journal', 'journal.anchor']);
    const checkpoints = readFileSync(join(home, 'journal.checkpoints.jsonl'), 'utf8');
    await refusedStart(/the signed checkpoints do not vouch for this journal: the (activity|sessions) journal ends at seq \d+ but the anchor records seq \d+: an older copy was put back.*against checkpoint #\d+/);
    assert.equal(readFileSync(join(home, 'journal.checkpoints.jsonl'), 'utf8'), checkpoints, 'the refused start signed nothing');
    assert.equal(hits(later), 1, 'the later key did not run again');
    const v = await inst.sb.run(['audit', 'verify', '--unlock', ...pass()]);
    assert.equal(v.code, 1, v.stdout + v.stderr);
    assert.match(v.stdout, /checkpoint: MISMATCH: /);
    // The newest journal back: it starts, and the later key is a replay.
    restore('later', ['journal', 'journal.anchor']);
    await inst.startDaemon();
    const r = await call({ title: 'later', idempotency_key: later });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(later), 1);
    assert.equal(await inst.stopDaemon(), 0);
    const ok = await inst.sb.run(['audit', 'verify', '--unlock', ...pass()]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });

  it('(a) the explicit way forward: `postern anchor new-journal` records the new journal in the vault; the daemon starts', async () => {
    for (const f of files) rmSync(join(home, f), { recursive: true, force: true });
    await refusedStart(/this is not a new home/);
    const r = await inst.sb.run(['anchor', 'new-journal', '--yes', '--reason', 'journal lost', ...pass()]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /started journal [0-9a-f-]+/);
    await inst.startDaemon();
    assert.equal(await inst.stopDaemon(), 0);
    const status = await inst.sb.run(['anchor', 'status', ...pass()]);
    assert.equal(status.code, 0, status.stdout + status.stderr);
  });
});
