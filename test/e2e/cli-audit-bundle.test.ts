// @subject time: bundle time ranges (run again a year ahead by .ci/run)
/**
 * Signed checkpoints, bundles and prune through the built CLI and the real
 * daemon: a clean stop leaves a signed checkpoint; `audit key` prints the
 * fingerprint; `audit verify` reports against the checkpoint (and refuses
 * another key and a journal put back from an older copy); `audit export
 * --bundle` writes a bundle that `audit verify --bundle` checks in a directory
 * with no home and no vault, and refuses after one changed byte; `audit
 * prune` refuses while the daemon runs, keeps a key inside the retention
 * window (it still replays after the prune) and leaves the journals
 * verifiable. A bundle spanning a catalog change carries both accepted texts
 * (the older one from the home's archive) and the sessions journal entries
 * of the calls' sessions, and a changed sessions entry is refused. The token is a canary: it never appears in any output.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';

const TOKEN = canary('bundle');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const note = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
const write = (path: string) => ({ description: `A write to ${path}.`, effect: 'write', approval: 'none', revisions: [{ revision: 1, input: note, http: { target: 'local', method: 'POST', path, body: { title: '{title}' } } }] });

describe('audit: signed checkpoints, bundles, prune', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let fingerprint = '';
  let catalog: Record<string, unknown> = {};
  const keys = [`key-${randomBytes(6).toString('hex')}`, `key-${randomBytes(6).toString('hex')}`];
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  const call = async (name: string, args: Record<string, unknown>): Promise<Result> => (await agent.callTool({ name, arguments: args })) as Result;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, target: { idempotency_header: true }, catalog: (targets) => (catalog = { targets, tools: { notes_write: write('/echo'), other_write: write('/echo') } }) }));
    agent = await inst.client();
    for (const k of keys) assert.equal((await call('notes_write', { title: `t ${k}`, idempotency_key: k })).isError, undefined);
    assert.equal((await call('other_write', { title: 'other', idempotency_key: `o-${randomBytes(4).toString('hex')}` })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('audit key prints the fingerprint; verify reports against the last checkpoint, pinned or not', async () => {
    const k = await inst.sb.run(['audit', 'key', '--json', ...pass()]);
    assert.equal(k.code, 0, k.stderr);
    const key = JSON.parse(k.stdout) as { fingerprint: string; public_key: string };
    assert.match(key.fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
    fingerprint = key.fingerprint;
    const v = await inst.sb.run(['audit', 'verify']);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match(v.stdout, /^checkpoint: ok: journal matches checkpoint #\d+ \(shutdown, .*key SHA256:.*not pinned/m);
    const pinned = await inst.sb.run(['audit', 'verify', '--key', fingerprint]);
    assert.equal(pinned.code, 0, pinned.stdout);
    assert.doesNotMatch(pinned.stdout, /not pinned/);
    const unlocked = await inst.sb.run(['audit', 'verify', '--unlock', ...pass()]);
    assert.equal(unlocked.code, 0, unlocked.stdout + unlocked.stderr);
    const other = await inst.sb.run(['audit', 'verify', '--key', `SHA256:${'A'.repeat(43)}`]);
    assert.equal(other.code, 1);
    assert.match(other.stdout, /^checkpoint: MISMATCH: no checkpoint is signed by the named key/m);
  });

  it('a journal put back from an older copy is found against the checkpoint', async () => {
    const home = inst.sb.home;
    const snap = join(inst.sb.dir, 'snap-journal');
    cpSync(join(home, 'journal'), snap, { recursive: true });
    await inst.startDaemon();
    agent = await inst.client();
    assert.equal((await call('notes_write', { title: 'later', idempotency_key: `later-${randomBytes(4).toString('hex')}` })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    const current = join(inst.sb.dir, 'current-journal');
    cpSync(join(home, 'journal'), current, { recursive: true });
    rmSync(join(home, 'journal'), { recursive: true });
    cpSync(snap, join(home, 'journal'), { recursive: true });
    const v = await inst.sb.run(['audit', 'verify', '--key', fingerprint]);
    assert.equal(v.code, 1);
    assert.match(v.stdout, /^checkpoint: MISMATCH: the (activity|sessions) journal ends at seq \d+ but the anchor records seq \d+.*against checkpoint #/m);
    const doctor = await inst.sb.run(['doctor', '--unlock', '--json', ...pass()]);
    const finding = (JSON.parse(doctor.stdout) as { status: string; check: string; detail: string }[]).find((f) => f.check === 'journal checkpoints');
    assert.equal(finding?.status, 'warning', doctor.stdout);
    assert.match(finding?.detail ?? '', /against checkpoint #\d+/);
    rmSync(join(home, 'journal'), { recursive: true });
    cpSync(current, join(home, 'journal'), { recursive: true });
    assert.equal((await inst.sb.run(['audit', 'verify'])).code, 0);
    const healthy = JSON.parse((await inst.sb.run(['doctor', '--unlock', '--json', ...pass()])).stdout) as { status: string; check: string; detail: string }[];
    assert.match(healthy.find((f) => f.check === 'journal checkpoints')?.detail ?? '', /^journal matches checkpoint #\d+ \(shutdown/);
  });

  it('export --bundle writes a bundle that verifies with no home and no vault; one changed byte is refused', async () => {
    const file = join(inst.sb.dir, 'notes.bundle');
    const e = await inst.sb.run(['audit', 'export', '--bundle', file, '--tool', 'notes_write']);
    assert.equal(e.code, 0, e.stderr);
    assert.match(e.stdout, /^bundled 3 calls \(\d+ entries, \d+ checkpoints, key SHA256:/m);
    // Elsewhere: a directory with the bundle only, and a home that does not exist.
    const away = mkdtempSync(join(tmpdir(), 'postern-away-'));
    try {
      const copy = join(away, 'notes.bundle');
      writeFileSync(copy, readFileSync(file));
      const env = { POSTERN_HOME: join(away, 'no-home') };
      const v = await inst.sb.run(['audit', 'verify', '--bundle', copy, '--key', fingerprint], { env });
      assert.equal(v.code, 0, v.stderr);
      assert.match(v.stdout, /^bundle ok: 3 calls \(3 with their outcome\) in \d+ entries, seq \d+–\d+ of journal [0-9a-f-]+$/m);
      assert.match(v.stdout, /the key you named/);
      const bytes = readFileSync(copy);
      const at = bytes.indexOf('notes_write') + 2;
      bytes[at] = bytes[at] === 0x78 ? 0x79 : 0x78;
      writeFileSync(copy, bytes);
      const bad = await inst.sb.run(['audit', 'verify', '--bundle', copy], { env });
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /^postern: AUDIT_BUNDLE_INVALID: the bundle does not verify: /);
      assert.equal(bad.stderr.trim().split('\n').length <= 2, true, bad.stderr);
      assert.doesNotMatch(bad.stderr, /at .*\.js:\d+/, 'no stack trace');
    } finally {
      rmSync(away, { recursive: true, force: true });
    }
  });

  it('a bundle across a catalog change carries both catalog texts and the sessions entries; a changed sessions entry is refused', async () => {
    const other = { ...write('/echo'), description: 'A write to /echo, described anew.' };
    await inst.acceptCatalog({ ...catalog, tools: { ...(catalog['tools'] as object), other_write: other } });
    await inst.startDaemon();
    agent = await inst.client();
    assert.equal((await call('other_write', { title: 'after the change', idempotency_key: `c-${randomBytes(4).toString('hex')}` })).isError, undefined);
    assert.equal(await inst.stopDaemon(), 0);
    const file = join(inst.sb.dir, 'all.bundle');
    const e = await inst.sb.run(['audit', 'export', '--bundle', file]);
    assert.equal(e.code, 0, e.stderr);
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as {
      format: string;
      catalogs: { text: string | null }[];
      sessions: { ids: string[]; segments: { rows: { type: string; body: string }[] }[] };
    };
    assert.equal(bundle.format, 'postern.audit-bundle/2');
    assert.equal(bundle.catalogs.length, 2);
    assert.equal(bundle.catalogs.every((c) => c.text !== null), true, 'the older catalog text comes from the archive');
    assert.equal(bundle.sessions.ids.length, 3, 'three agent sessions ran the bundled calls');
    const v = await inst.sb.run(['audit', 'verify', '--bundle', file, '--key', fingerprint]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match(v.stdout, /^ {2}catalogs: 2 referenced, 2 with their text$/m);
    assert.match(v.stdout, /^ {2}sessions: 3 the calls ran in, \d+ of their entries, in \d+ sessions journal entries hashed to signed heads$/m);
    const json = JSON.parse((await inst.sb.run(['audit', 'verify', '--bundle', file, '--json'])).stdout) as { sessions: { sessions: number } };
    assert.equal(json.sessions.sessions, 3);
    // A changed sessions entry, written back in the exporter's exact form: the chain no longer reaches the signed head.
    const rows = bundle.sessions.segments.flatMap((g) => g.rows);
    const started = rows.find((r) => r.type === 'session_started')!;
    started.body = started.body.replace('"', '"x');
    const edited = join(inst.sb.dir, 'edited.bundle');
    writeFileSync(edited, `${JSON.stringify(bundle)}\n`);
    const bad = await inst.sb.run(['audit', 'verify', '--bundle', edited]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^postern: AUDIT_BUNDLE_INVALID: the bundle does not verify: sessions segment \d+ .*does not hash to the sessions head/m);
    // The sessions side removed altogether: a /2 bundle must carry it.
    const stripped = join(inst.sb.dir, 'stripped.bundle');
    writeFileSync(stripped, `${JSON.stringify({ ...bundle, sessions: undefined })}\n`);
    const gone = await inst.sb.run(['audit', 'verify', '--bundle', stripped]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /AUDIT_BUNDLE_INVALID/);
  });

  it('prune refuses while the daemon runs; then keeps a key inside the retention window and the journals verifiable', async () => {
    await inst.startDaemon();
    const busy = await inst.sb.run(['audit', 'prune', '--before', '0s', '--yes', ...pass()]);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /DAEMON_RUNNING/);
    assert.equal(await inst.stopDaemon(), 0);
    const p = await inst.sb.run(['audit', 'prune', '--before', '0s', '--yes', ...pass()]);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /activity: 0 entries up to seq 0 \(stops at a key still inside the idempotency retention window/);
    assert.match(p.stdout, /sessions: [1-9]\d* entries up to seq \d+/);
    const v = await inst.sb.run(['audit', 'verify', '--key', fingerprint]);
    assert.equal(v.code, 0, v.stdout);
    assert.match(v.stdout, /^sessions journal: ok, \d+ entries \(pruned: starts after seq \d+\), head seq/m);
    assert.match(v.stdout, /^checkpoint: ok: journal matches checkpoint #\d+ \((prune|shutdown)/m);
    const events = await inst.sb.run(['audit', 'session', '--daemon', '--json']);
    assert.ok((JSON.parse(events.stdout) as { type: string }[]).some((x) => x.type === 'journal_pruned'));
    await inst.startDaemon();
    agent = await inst.client();
    const r = await call('notes_write', { title: `t ${keys[0]!}`, idempotency_key: keys[0]! });
    assert.equal(r.structuredContent?.['replayed'], true, JSON.stringify(r));
    assert.equal(await inst.stopDaemon(), 0);
  });

  it('passwd: the old key endorses the new one, and a verifier who pinned the old fingerprint follows it', async () => {
    const newPass = await inst.sb.file('new-pass', `new-${randomBytes(8).toString('hex')}-passphrase\n`);
    const pw = await inst.sb.run(['passwd', '--new-passphrase-file', newPass, ...pass()]);
    assert.equal(pw.code, 0, pw.stderr);
    assert.match(pw.stdout + pw.stderr, /journal checkpoints: the new key SHA256:\S+ is endorsed by the old one/);
    writeFileSync(inst.passFile, readFileSync(newPass));
    const k = await inst.sb.run(['audit', 'key', '--json', ...pass()]);
    const next = (JSON.parse(k.stdout) as { fingerprint: string }).fingerprint;
    assert.notEqual(next, fingerprint);
    await inst.startDaemon();
    assert.equal(await inst.stopDaemon(), 0);
    const v = await inst.sb.run(['audit', 'verify', '--key', fingerprint, '--unlock', ...pass()]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match(v.stdout, new RegExp(`^checkpoint: ok: journal matches checkpoint #\\d+ \\(shutdown, .*key ${next.replace(/[+/]/g, '\\$&')}\\)`, 'm'));
  });
});
