/**
 * An older journal and its anchor put back with the checkpoint file deleted,
 * emptied or cut back (THREATS 15), as a same-user agent would, no
 * passphrase: the vault records at each save how far the checkpoints went,
 * so their absence no longer reads as "none yet". The daemon refuses to
 * start, `doctor --unlock` and `anchor status` name it, and the key
 * completed after the copy reaches the target exactly once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, readFileSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, writeTool } from '../helpers/fixture.js';

const TOKEN = canary('cplost');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const newKey = (): string => `key-${randomBytes(8).toString('hex')}`;

describe('daemon: an older journal and anchor put back without the checkpoints', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let home: string;
  let checkpoints: string;
  const first = newKey(); // completed before the copy
  const later = newKey(); // completed after the copy: must never run again
  let copiedLines = 0;
  const hits = (k: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === k)).length;
  const call = async (args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name: 'quick_write', arguments: args })) as Result;
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  const copy = (name: string, files: readonly string[]): void => {
    const to = join(inst.sb.dir, `snap-${name}`);
    rmSync(to, { recursive: true, force: true });
    for (const f of files) cpSync(join(home, f), join(to, f), { recursive: true });
  };
  const putBack = (name: string, files: readonly string[]): void => {
    for (const f of files) {
      rmSync(join(home, f), { recursive: true, force: true });
      cpSync(join(inst.sb.dir, `snap-${name}`, f), join(home, f), { recursive: true });
    }
  };
  const NEWEST = ['journal', 'journal.anchor', 'journal.checkpoints.jsonl', 'vault.pvlt'];

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, target: { idempotency_header: true }, tools: { quick_write: writeTool('/echo') } }));
    home = inst.sb.home;
    checkpoints = join(home, 'journal.checkpoints.jsonl');
    agent = await inst.client();
    assert.equal((await call({ title: 'first', idempotency_key: first })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    // A vault save while no daemon runs: the vault records the checkpoints as they are now.
    const added = await inst.sb.run(['secret', 'add', 'other', '--kind', 'http_bearer', '--stdin', ...pass()], { input: `other-${randomBytes(8).toString('hex')}` });
    assert.equal(added.code, 0, added.stderr);
    // The agent's copy: the journal, its anchor and the checkpoint file, after that save.
    copy('old', ['journal', 'journal.anchor', 'journal.checkpoints.jsonl']);
    copiedLines = readFileSync(checkpoints, 'utf8').trim().split('\n').length;
    await inst.startDaemon();
    assert.equal((await call({ title: 'later', idempotency_key: later })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    assert.equal(hits(later), 1);
    copy('newest', NEWEST);
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  /** Every way in refuses the home; the later key reaches nothing. */
  const refusedEverywhere = async (line: RegExp): Promise<void> => {
    // The daemon first: a daemon that starts on this home runs the later key a second time.
    let error: Error | undefined;
    await inst.startDaemon().catch((e: Error) => (error = e));
    if (error === undefined) {
      await call({ title: 'later', idempotency_key: later });
      await inst.stopDaemon();
      assert.fail(`the daemon started on an older journal without its checkpoints; the later key reached the target ${hits(later)} times`);
    }
    inst.daemon = null;
    assert.match(error.message, /daemon exited 1: [^]*postern: JOURNAL_ANCHOR_MISMATCH: /);
    assert.match(error.message, line);
    assert.match(error.message, /put back journal\.checkpoints\.jsonl from a backup, or start a new journal with `postern anchor new-journal`/);
    const doctor = await inst.sb.run(['doctor', '--unlock', '--json', ...pass()]);
    const findings = JSON.parse(doctor.stdout) as { status: string; check: string; detail: string }[];
    const cp = findings.find((f) => f.check === 'journal checkpoints');
    assert.equal(cp?.status, 'warning', doctor.stdout);
    assert.match(cp?.detail ?? '', line);
    const status = await inst.sb.run(['anchor', 'status', ...pass()]);
    assert.equal(status.code, 1, status.stdout);
    assert.match(status.stdout, line);
    const r = await call({ title: 'later', idempotency_key: later });
    assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
    assert.equal(hits(later), 1, 'the later key ran once, ever');
  };

  it('the checkpoint file deleted → refused everywhere; the newest files back → the later key replays', async () => {
    putBack('old', ['journal', 'journal.anchor']);
    unlinkSync(checkpoints);
    await refusedEverywhere(/the checkpoint file is missing or empty, but the vault recorded \d+ signed checkpoint/);
    putBack('newest', NEWEST);
    await inst.startDaemon();
    const r = await call({ title: 'later', idempotency_key: later });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(hits(later), 1);
    assert.equal(await inst.stopDaemon(), 0);
    copy('newest', NEWEST);
  });

  it('the checkpoint file emptied → refused everywhere', async () => {
    putBack('old', ['journal', 'journal.anchor']);
    truncateSync(checkpoints, 0);
    await refusedEverywhere(/the checkpoint file is missing or empty/);
    putBack('newest', NEWEST);
  });

  it('the checkpoint file cut back before the line the vault recorded → refused everywhere', async () => {
    putBack('old', ['journal', 'journal.anchor']);
    const lines = readFileSync(checkpoints, 'utf8').trim().split('\n');
    writeFileSync(checkpoints, `${lines.slice(0, copiedLines - 1).join('\n')}\n`);
    await refusedEverywhere(/the checkpoint file no longer holds checkpoint #\d+, the last one the vault recorded at a save/);
    putBack('newest', NEWEST);
  });

  it('the checkpoint file with the recorded line edited (a re-signed stand-in) → refused', async () => {
    putBack('old', ['journal', 'journal.anchor']);
    const lines = readFileSync(checkpoints, 'utf8').trim().split('\n').slice(0, copiedLines);
    const last = JSON.parse(lines[copiedLines - 1]!) as { record: { at: string } };
    last.record.at = '2000-01-01T00:00:00.000Z';
    lines[copiedLines - 1] = JSON.stringify(last);
    writeFileSync(checkpoints, `${lines.join('\n')}\n`);
    await refusedEverywhere(/no longer holds checkpoint #\d+/);
    putBack('newest', NEWEST);
  });

  it('an honest home: doctor --unlock and anchor status are ok, the daemon starts', async () => {
    const doctor = await inst.sb.run(['doctor', '--unlock', '--json', ...pass()]);
    const findings = JSON.parse(doctor.stdout) as { status: string; check: string; detail: string }[];
    for (const check of ['journal anchor', 'journal checkpoints', 'idempotency claims']) assert.equal(findings.find((f) => f.check === check)?.status, 'ok', doctor.stdout);
    const status = await inst.sb.run(['anchor', 'status', ...pass()]);
    assert.equal(status.code, 0, status.stdout + status.stderr);
    await inst.startDaemon();
    assert.equal((await call({ title: 'first', idempotency_key: first })).structuredContent?.['replayed'], true);
    assert.equal(await inst.stopDaemon(), 0);
    assert.equal(hits(first), 1);
  });
});
