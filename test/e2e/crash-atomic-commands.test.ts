/**
 * Commands that change several home files survive a kill -9 at every file
 * event (src/home/change-record.ts; THREATS 13, 15). Each command is run once
 * per event N with POSTERN_TEST_KILL_AT_FILE_EVENT=N (src/home/file-events.ts:
 * the process SIGKILLs itself right after its Nth write, fsync, rename or
 * unlink), on a fresh copy of one prepared home, until a run completes
 * without reaching N. After each kill: `doctor --unlock` (which finishes the
 * interrupted change) succeeds with exactly one of the two passphrases, the
 * other opens nothing, the daemon starts, and an idempotency key completed
 * before the command replays its stored result without a new request.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { cp, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { KILL_AT_FILE_EVENT } from '../../src/home/file-events.js';
import { install, PASSPHRASE, type Installation } from '../helpers/daemon.js';
import { TEST_VAULT_OPTIONS } from '../helpers/cli.js';
import { openVault } from '../../src/vault/index.js';
import { isPosternError } from '../../src/rules/errors.js';

const TOKEN = `CANARY-tok-${randomBytes(12).toString('hex')}`;
const NEW_PASSPHRASE = 'crash-new-passphrase-0123';
const KEY = `key-${randomBytes(8).toString('hex')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

const note = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
const writeTool = (path: string) => ({ description: 'A write that needs no approval.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: note, http: { target: 'local', method: 'POST', path, body: { title: '{title}' } } }] });
const catalogFor = (origin: string, extra: boolean) => ({
  targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
  tools: { quick_write: writeTool('/echo'), ...(extra ? { second_write: writeTool('/second') } : {}) },
});

describe('a kill -9 at every file event of a multi-file command', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let pristine: string;
  let stored: Record<string, unknown>;

  before(async () => {
    http = await startFakeHttp();
    inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: TOKEN }] });
    await inst.acceptCatalog(catalogFor(http.origin, false));
    await inst.startDaemon();
    const agent = await inst.client();
    const r = (await agent.callTool({ name: 'quick_write', arguments: { title: 'before', idempotency_key: KEY } })) as Result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    stored = r.structuredContent!;
    await agent.close();
    await inst.stopDaemon();
    pristine = join(inst.sb.dir, 'pristine');
    await cp(inst.sb.home, pristine, { recursive: true, preserveTimestamps: true });
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const restore = async (): Promise<void> => {
    await rm(inst.sb.home, { recursive: true, force: true });
    await cp(pristine, inst.sb.home, { recursive: true, preserveTimestamps: true });
  };

  const opens = async (pass: string): Promise<boolean> => {
    try {
      (await openVault(join(inst.sb.home, 'vault.pvlt'), Buffer.from(pass), TEST_VAULT_OPTIONS)).lock();
      return true;
    } catch (e) {
      if (isPosternError(e, 'VAULT_AUTH')) return false;
      throw e;
    }
  };

  /** Opens the home as the next command would, then proves it whole: one passphrase, doctor, daemon, replay. */
  async function proveWhole(where: string, candidates: readonly string[]): Promise<string> {
    let working: string | undefined;
    for (const pass of candidates) {
      await writeFile(inst.passFile, `${pass}\n`);
      const doctor = await inst.sb.run(['doctor', '--unlock', '--passphrase-file', inst.passFile]);
      if (doctor.code === 0) {
        working = pass;
        assert.doesNotMatch(doctor.stdout, /does not verify|MISMATCH|unauthenticated/i, `${where}: doctor --unlock\n${doctor.stdout}`);
        break;
      }
      assert.match(doctor.stderr, /VAULT_AUTH/, `${where}: doctor failed otherwise than on the passphrase\n${doctor.stdout}${doctor.stderr}`);
    }
    assert.ok(working !== undefined, `${where}: no passphrase opens the home`);
    const openers = [];
    for (const pass of candidates) if (await opens(pass)) openers.push(pass);
    assert.deepEqual(openers, [working], `${where}: exactly one passphrase opens the vault`);
    assert.ok(!(await readdir(inst.sb.home)).includes('change.pending'), `${where}: the change record was finished`);
    const before = http.requests.length;
    await inst.startDaemon();
    try {
      const agent = await inst.client();
      const r = (await agent.callTool({ name: 'quick_write', arguments: { title: 'before', idempotency_key: KEY } })) as Result;
      await agent.close();
      assert.equal(r.structuredContent?.['replayed'], true, `${where}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.structuredContent?.['body'], stored['body'], `${where}: the stored result`);
      assert.equal(http.requests.length, before, `${where}: no new request`);
    } finally {
      await inst.stopDaemon();
    }
    return working;
  }

  /** Runs `args` killed at event 1, 2, … until it completes; returns how many events it has. */
  async function killAtEveryEvent(name: string, prepare: () => Promise<void>, args: () => string[], candidates: readonly string[], afterKill: (at: number, working: string) => void, input?: string): Promise<number> {
    for (let at = 1; at < 200; at++) {
      await restore();
      await prepare();
      await writeFile(inst.passFile, `${PASSPHRASE}\n`);
      const r = await inst.sb.run(args(), { env: { [KILL_AT_FILE_EVENT]: String(at) }, ...(input === undefined ? {} : { input }) });
      if (r.code !== null) {
        assert.equal(r.code, 0, `${name} without a kill: ${r.stderr}`);
        const working = await proveWhole(`${name}, completed`, candidates);
        afterKill(at, working);
        return at - 1;
      }
      afterKill(at, await proveWhole(`${name}, killed at file event ${at}`, candidates));
    }
    throw new Error(`${name} never completed`);
  }

  it('postern passwd: the home is keyed by the old passphrase or the new one, never a mix', async () => {
    const newFile = await inst.sb.file('new-pass', `${NEW_PASSPHRASE}\n`);
    const seen = new Set<string>();
    const events = await killAtEveryEvent('passwd', () => Promise.resolve(), () => ['passwd', '--passphrase-file', inst.passFile, '--new-passphrase-file', newFile], [NEW_PASSPHRASE, PASSPHRASE], (_at, working) => seen.add(working));
    assert.ok(events >= 8, `passwd made ${events} file events`);
    assert.deepEqual([...seen].sort(), [NEW_PASSPHRASE, PASSPHRASE].sort(), 'some kills land before the change record, some after');
  });

  it('postern catalog accept: the vault mark, copy, record, history and archive move together', async () => {
    const text = stringify(catalogFor(http.origin, true));
    const digest = createHash('sha256').update(text).digest('hex');
    const events = await killAtEveryEvent(
      'catalog accept',
      () => writeFile(join(inst.sb.home, 'catalog.yaml'), text, { mode: 0o600 }),
      () => ['catalog', 'accept', '--digest', digest, '--passphrase-file', inst.passFile],
      [PASSPHRASE],
      () => undefined,
    );
    assert.ok(events >= 8, `catalog accept made ${events} file events`);
  });

  it('postern secret rotate: the vault and the anchor move together', async () => {
    const events = await killAtEveryEvent('secret rotate', () => Promise.resolve(), () => ['secret', 'rotate', 'api-token', '--stdin', '--passphrase-file', inst.passFile], [PASSPHRASE], () => undefined, `ROTATED-${randomBytes(8).toString('hex')}`);
    assert.ok(events >= 4, `secret rotate made ${events} file events`);
  });
});
