/**
 * The home change (src/home/change-record.ts): staged files are committed as
 * one write-ahead record, a record left by a killed writer is finished by the
 * next opener (every step idempotent), and a record that is malformed or names
 * a file outside the home is refused without touching anything.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HomeChange, finishPendingChange } from '../../../src/home/change-record.js';
import { homePaths, type HomePaths } from '../../../src/home/paths.js';
import { isPosternError } from '../../../src/rules/errors.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function home(): Promise<HomePaths> {
  const d = await mkdtemp(join(tmpdir(), 'postern-change-'));
  dirs.push(d);
  return homePaths(d);
}

/** The record a writer killed right after writing it leaves: commit's first step alone. */
async function leaveRecord(paths: HomePaths, stage: (c: HomeChange) => void): Promise<string> {
  const c = new HomeChange(paths, 'test');
  stage(c);
  await c.commit();
  const record = await readFile(paths.changeRecord, 'utf8').catch(() => undefined);
  assert.equal(record, undefined, 'a committed change leaves no record');
  return record ?? '';
}

describe('HomeChange', () => {
  it('commits every staged file and removes its record', async () => {
    const paths = await home();
    await writeFile(paths.catalogHistory, 'one\n');
    await leaveRecord(paths, (c) => {
      c.write(paths.acceptedRecord, '{"a":1}\n');
      c.write(join(paths.catalogArchive, 'x.yaml'), 'text');
      c.append(paths.catalogHistory, 'two');
    });
    assert.equal(await readFile(paths.acceptedRecord, 'utf8'), '{"a":1}\n');
    assert.equal(await readFile(join(paths.catalogArchive, 'x.yaml'), 'utf8'), 'text');
    assert.equal(await readFile(paths.catalogHistory, 'utf8'), 'one\ntwo\n');
  });

  it('a record found on opening is finished, and finishing twice is finishing once', async () => {
    const paths = await home();
    // A writer killed after its record and part of its files: the history line is already there.
    await writeFile(paths.catalogHistory, 'one\ntwo\n');
    const files = [
      { op: 'write', path: 'catalog.accepted.json', data: Buffer.from('new').toString('base64') },
      { op: 'append', path: 'catalog.history.jsonl', line: 'two' },
      { op: 'remove', path: 'mcp-http.authorized.json' },
    ];
    await writeFile(paths.mcpHttpAuthorization, 'old');
    const { createHash } = await import('node:crypto');
    const digest = createHash('sha256').update(JSON.stringify({ format: 'postern.home-change/1', command: 'passwd', files })).digest('hex');
    const record = JSON.stringify({ format: 'postern.home-change/1', command: 'passwd', files, digest });
    await writeFile(paths.changeRecord, record);
    assert.deepEqual(await finishPendingChange(paths), { kind: 'finished', command: 'passwd' });
    assert.equal(await readFile(paths.acceptedRecord, 'utf8'), 'new');
    assert.equal(await readFile(paths.catalogHistory, 'utf8'), 'one\ntwo\n', 'the line is not appended twice');
    assert.ok(!existsSync(paths.mcpHttpAuthorization));
    assert.ok(!existsSync(paths.changeRecord));
    // Killed again while finishing: the same record applied once more changes nothing.
    await writeFile(paths.changeRecord, record);
    assert.deepEqual(await finishPendingChange(paths), { kind: 'finished', command: 'passwd' });
    assert.equal(await readFile(paths.catalogHistory, 'utf8'), 'one\ntwo\n');
    assert.deepEqual(await finishPendingChange(paths), { kind: 'none' });
  });

  it('a rename is done unless its target is there: swapping two directories finishes once, wherever it was killed', async () => {
    const paths = await home();
    const aside = join(paths.home, 'journal.replaced-1');
    const staged = join(paths.home, 'journal.staged-1');
    const files = [
      { op: 'rename', from: 'journal', path: 'journal.replaced-1' },
      { op: 'rename', from: 'journal.staged-1', path: 'journal' },
    ];
    const { createHash } = await import('node:crypto');
    const digest = createHash('sha256').update(JSON.stringify({ format: 'postern.home-change/1', command: 'anchor new-journal', files })).digest('hex');
    const record = JSON.stringify({ format: 'postern.home-change/1', command: 'anchor new-journal', files, digest });
    const { mkdir } = await import('node:fs/promises');
    // Killed before the first rename, between the two, and after both.
    for (const done of [0, 1, 2]) {
      await rm(paths.journalDir, { recursive: true, force: true });
      await rm(aside, { recursive: true, force: true });
      await rm(staged, { recursive: true, force: true });
      await mkdir(done === 0 ? paths.journalDir : aside, { recursive: true });
      await writeFile(join(done === 0 ? paths.journalDir : aside, 'old'), 'old');
      await mkdir(done === 2 ? paths.journalDir : staged, { recursive: true });
      await writeFile(join(done === 2 ? paths.journalDir : staged, 'new'), 'new');
      await writeFile(paths.changeRecord, record);
      assert.deepEqual(await finishPendingChange(paths), { kind: 'finished', command: 'anchor new-journal' });
      assert.equal(await readFile(join(paths.journalDir, 'new'), 'utf8'), 'new', `killed after ${done} renames: the new directory is in place`);
      assert.equal(await readFile(join(aside, 'old'), 'utf8'), 'old', `killed after ${done} renames: the old one is kept aside`);
      assert.ok(!existsSync(staged));
    }
  });

  it('refuses a malformed record, a forged digest and a path outside the home, touching nothing', async () => {
    const paths = await home();
    await writeFile(paths.acceptedRecord, 'kept');
    const files = [{ op: 'write', path: '../outside', data: '' }];
    for (const text of ['{', JSON.stringify({ format: 'postern.home-change/1', command: 'x', files, digest: '0'.repeat(64) }),
      JSON.stringify({ format: 'postern.home-change/1', command: 'x', files: [{ op: 'write', path: 'catalog.accepted.json', data: '' }], digest: '0'.repeat(64) })]) {
      await writeFile(paths.changeRecord, text);
      await assert.rejects(finishPendingChange(paths), (e) => isPosternError(e, 'CHANGE_RECORD_INVALID'));
      assert.equal(await readFile(paths.acceptedRecord, 'utf8'), 'kept');
    }
    const c = new HomeChange(paths, 'x');
    assert.throws(() => c.write(join(paths.home, '..', 'elsewhere'), 'x'), (e) => isPosternError(e, 'INTERNAL'));
  });
});
