/**
 * A damaged page anywhere in a journal is named everywhere the operator
 * looks, and salvage loses only what was on it: a corrupt middle page of
 * activity.db makes the daemon refuse with JOURNAL_DAMAGED, and `doctor`
 * (with and without --unlock) reports the same code with the way back;
 * `audit salvage` with each page of a small journal damaged in turn recovers
 * every entry that was not on that page (the entries on a leaf, or the one
 * entry whose overflow it held — counted from SQLite's dbstat of the intact
 * file), each identical to the intact one; a home whose daemon never ran is
 * told plainly that there is nothing to salvage.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { copyFile, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { cliSandbox } from '../helpers/cli.js';
import { damagePage } from '../helpers/journal-damage.js';
import { crashTools } from '../helpers/crash-harness.js';

type Result = { isError?: boolean };
type Stored = { seq: number; hash: string };

/** What a page of the intact file holds of `entries`: how many entries are lost with it. */
function lostWith(db: Database.Database, page: number): number {
  const p = db.prepare(`SELECT name, pagetype, ncell FROM dbstat WHERE pageno = ?`).get(page) as { name: string; pagetype: string; ncell: number } | undefined;
  if (p === undefined || p.name !== 'entries') return 0;
  if (p.pagetype === 'leaf') return p.ncell;
  if (p.pagetype === 'overflow') return 1;
  return 0; // the root or an interior page: every entry is still on a leaf
}

describe('a damaged page anywhere in a journal', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let journalDir: string;
  let pristine: string;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('damaged-pages'), tools: crashTools(false) }));
    const agent = await inst.client();
    for (let i = 0; i < 20; i++) {
      const r = (await agent.callTool({ name: 'quick_write', arguments: { title: `${i} ${'x'.repeat(90)}`, idempotency_key: `k-${i}-${randomBytes(4).toString('hex')}` } })) as Result;
      assert.equal(r.isError, undefined, JSON.stringify(r));
    }
    await agent.close();
    await inst.stopDaemon();
    journalDir = join(inst.sb.home, 'journal');
    assert.ok(!existsSync(join(journalDir, 'activity.db-wal')) || (await readFile(join(journalDir, 'activity.db-wal'))).length === 0, 'the journal is checkpointed');
    pristine = join(inst.sb.dir, 'activity.pristine.db');
    await copyFile(join(journalDir, 'activity.db'), pristine);
  });

  after(async () => {
    await inst.cleanup();
    await http.close();
  });

  const putBack = (): Promise<void> => copyFile(pristine, join(journalDir, 'activity.db'));

  it('a corrupt middle page of activity.db: the daemon refuses with JOURNAL_DAMAGED, and doctor says so too, with the way back', async () => {
    await putBack();
    damagePage(join(journalDir, 'activity.db'), 'entries-middle-leaf');
    const daemon = await inst.sb.run(['daemon', '--passphrase-file', inst.passFile]);
    assert.equal(daemon.code, 1);
    assert.match(daemon.stderr, /JOURNAL_DAMAGED/);
    for (const args of [['doctor'], ['doctor', '--unlock', '--passphrase-file', inst.passFile]]) {
      const r = await inst.sb.run(args);
      assert.doesNotMatch(r.stdout + r.stderr, /INTERNAL|\n\s+at /, args.join(' '));
      assert.match(r.stdout, /warning\s+journal files\s+.*JOURNAL_DAMAGED.*activity journal.*corrupt/, `${args.join(' ')}\n${r.stdout}`);
      assert.match(r.stdout, /audit salvage/, `${args.join(' ')}: the way back`);
      const strict = await inst.sb.run([...args, '--strict']);
      assert.equal(strict.code, 1, `${args.join(' ')} --strict fails`);
    }
    await putBack();
    const clean = await inst.sb.run(['doctor']);
    assert.match(clean.stdout, /ok\s+journal files/, clean.stdout);
  });

  it('audit salvage, with each page damaged in turn: every entry not on that page is recovered, unchanged', async () => {
    const intact = new Database(pristine, { readonly: true });
    const all = new Map((intact.prepare('SELECT seq, hash FROM entries ORDER BY seq').all() as Stored[]).map((r) => [r.seq, r.hash]));
    const pages = intact.pragma('page_count', { simple: true }) as number;
    const pageSize = intact.pragma('page_size', { simple: true }) as number;
    const lost = Array.from({ length: pages + 1 }, (_, p) => (p === 0 ? 0 : lostWith(intact, p)));
    intact.close();
    assert.ok(all.size >= 40 && pages >= 6, `a journal of ${all.size} entries on ${pages} pages`);
    for (let page = 1; page <= pages; page++) {
      await putBack();
      const path = join(journalDir, 'activity.db');
      const fd = openSync(path, 'r+');
      writeSync(fd, Buffer.alloc(pageSize, 0xff), 0, pageSize, (page - 1) * pageSize);
      closeSync(fd);
      const out = join(inst.sb.dir, `salvage-${page}.jsonl`);
      const r = await inst.sb.run(['audit', 'salvage', journalDir, '--out', out]);
      assert.equal(r.code, 0, `page ${page}: ${r.stderr}`);
      const lines = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { journal: string; seq?: number; hash?: string });
      const got = lines.filter((l) => l.journal === 'activity' && l.seq !== undefined);
      for (const l of got) assert.equal(l.hash, all.get(l.seq!), `page ${page}: entry ${l.seq} as it was`);
      assert.equal(new Set(got.map((l) => l.seq)).size, got.length, `page ${page}: each entry once`);
      assert.equal(got.length, all.size - lost[page]!, `page ${page} (${lost[page]} entries on it): ${r.stdout}`);
      assert.match(r.stdout, new RegExp(`activity: ${all.size - lost[page]!} entries salvaged`));
      await rm(out);
    }
  });

  it('audit salvage on a home whose daemon never ran: nothing to salvage, said plainly, and no file written', async () => {
    const fresh = await cliSandbox();
    try {
      const pass = await fresh.file('pass', 'a-fresh-home-passphrase\n');
      assert.equal((await fresh.run(['init', '--passphrase-file', pass])).code, 0);
      const out = join(fresh.dir, 'salvage.jsonl');
      const r = await fresh.run(['audit', 'salvage', join(fresh.home, 'journal'), '--out', out]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^postern: INPUT_INVALID: nothing to salvage: .* holds no journal file \(sessions\.db, activity\.db\); a home whose daemon never ran has no journal yet/m);
      assert.doesNotMatch(r.stderr, /FILE_IO|cannot open/);
      assert.ok(!existsSync(out), 'no file written');
    } finally {
      await fresh.cleanup();
    }
  });
});
