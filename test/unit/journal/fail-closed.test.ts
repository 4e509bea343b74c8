/**
 * Fail-closed journaling (THREATS row 8): when the journal is locked, full,
 * corrupt, read-only or unsafe, a write throws JOURNAL_UNAVAILABLE (or the
 * open refuses), quickly and with a secret-free one-line message — and
 * nothing of the refused call is recorded. Tests run as root, so "read-only"
 * is made real with `chattr +i` and "full" with a tiny tmpfs; each is skipped
 * where the host does not allow it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals } from '../../../src/journal/index.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { callRecord, httpTarget, tempJournalDir } from './helpers.js';
import { damagePage } from '../../helpers/journal-damage.js';

const CANARY = 'CANARY-sk_live_do_not_print';

function unavailable(e: unknown): boolean {
  return failedWith('JOURNAL_UNAVAILABLE', e);
}
/** A file SQLite finds damaged (not a database, a malformed page) is named apart: JOURNAL_DAMAGED. */
function damagedFile(e: unknown): boolean {
  return failedWith('JOURNAL_DAMAGED', e);
}
function failedWith(code: 'JOURNAL_UNAVAILABLE' | 'JOURNAL_DAMAGED', e: unknown): boolean {
  assert.ok(isPosternError(e, code), `expected ${code}, got ${String(e)}`);
  assert.ok(!e.message.includes('\n'), 'one line');
  assert.ok(!e.message.includes(CANARY) && !JSON.stringify(e.details).includes(CANARY), 'no stored value in the error');
  return true;
}
const intent = () => ({ ...callRecord({ raw_arguments: { token_echo: CANARY }, idempotency_key: `k-${Math.random()}`, args_digest: 'd' }), target: httpTarget });

function chattr(flag: '+i' | '-i', path: string): boolean {
  return spawnSync('chattr', [flag, path], { stdio: 'ignore' }).status === 0;
}
const canChattr = (() => {
  const d = mkdtempSync(join(tmpdir(), 'postern-chattr-'));
  const ok = chattr('+i', d) && chattr('-i', d);
  rmSync(d, { recursive: true, force: true });
  return ok;
})();

describe('fail closed: locked journal', () => {
  const t = tempJournalDir();
  after(() => t.cleanup());

  it('another connection holding BEGIN EXCLUSIVE: writes fail fast and record nothing', () => {
    const j = openJournals(t.dir);
    const earlier = intent();
    j.activity.recordIntent(earlier);
    const before = j.activity.verify();
    const lock = new Database(join(t.dir, 'activity.db'));
    lock.exec('BEGIN EXCLUSIVE');
    const refused = intent();
    const started = Date.now();
    try {
      assert.throws(() => j.activity.recordIntent(refused), (e) => unavailable(e) && /locked/.test((e as Error).message));
      assert.ok(Date.now() - started < 10_000, 'fails within the busy timeout, does not hang');
      assert.throws(() => j.activity.recordRejected({ ...intent(), error_code: 'APPROVAL_DENIED', message: 'no' }), unavailable);
      assert.throws(() => j.activity.recordOutcome(earlier.call_id, { status: 'success', side_effect_started: true, duration_ms: 1 }), unavailable);
      assert.throws(() => openJournals(t.dir), unavailable, 'an open that must recover cannot proceed either');
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    assert.equal(j.activity.getCall(refused.call_id), undefined);
    assert.equal(j.activity.findByKey(refused.tool, refused.idempotency_key!), undefined);
    assert.equal(j.activity.getCall(earlier.call_id)?.status, 'in_progress', 'the earlier call has no outcome');
    assert.deepEqual(j.activity.verify(), before);
    assert.deepEqual(j.activity.recordIntent(refused), { claimed: true }, 'works again once the lock is gone');
    j.close();
  });

  it('a locked sessions journal refuses session events', () => {
    const j = openJournals(t.dir);
    const lock = new Database(join(t.dir, 'sessions.db'));
    lock.exec('BEGIN EXCLUSIVE');
    try {
      assert.throws(() => j.sessions.event(null, 'lock', { by: 'test' }), unavailable);
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    assert.deepEqual(j.sessions.events(null), []);
    j.close();
  });

  it('a closed journal refuses writes', () => {
    const j = openJournals(t.dir);
    j.close();
    assert.throws(() => j.activity.recordIntent(intent()), unavailable);
    assert.throws(() => j.sessions.event(null, 'daemon_stopped', {}), unavailable);
  });
});

describe('fail closed: read-only (chattr +i)', { skip: canChattr ? false : 'chattr +i is not available here' }, () => {
  it('the WAL file becomes immutable under an open journal: the intent fails, nothing recorded', () => {
    const t = tempJournalDir();
    const j = openJournals(t.dir);
    j.activity.recordIntent(intent()); // the WAL exists now
    const wal = join(t.dir, 'activity.db-wal');
    const refused = intent();
    assert.ok(chattr('+i', wal));
    try {
      assert.throws(() => j.activity.recordIntent(refused), unavailable);
    } finally {
      chattr('-i', wal);
      j.close();
    }
    const k = openJournals(t.dir);
    assert.equal(k.activity.getCall(refused.call_id), undefined);
    assert.equal(k.activity.verify().ok, true);
    k.close();
    t.cleanup();
  });

  it('an immutable journal directory or database file: the open refuses', () => {
    const t = tempJournalDir();
    mkdirSync(t.dir, { mode: 0o700 });
    assert.ok(chattr('+i', t.dir));
    try {
      assert.throws(() => openJournals(t.dir), unavailable);
    } finally {
      chattr('-i', t.dir);
    }
    openJournals(t.dir).close();
    const db = join(t.dir, 'activity.db');
    assert.ok(chattr('+i', db));
    try {
      assert.throws(() => openJournals(t.dir), unavailable);
    } finally {
      chattr('-i', db);
    }
    t.cleanup();
  });
});

describe('fail closed: disk full (tiny tmpfs)', () => {
  const root = mkdtempSync(join(tmpdir(), 'postern-full-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0700', 'tmpfs', root], { stdio: 'ignore' }).status === 0;
  after(() => {
    if (mounted) spawnSync('umount', [root], { stdio: 'ignore' });
    rmSync(root, { recursive: true, force: true });
  });

  it('writes fail with JOURNAL_UNAVAILABLE once the disk is full, and the failed call is absent', { skip: mounted ? false : 'cannot mount tmpfs here' }, () => {
    const j = openJournals(join(root, 'journal'));
    const recorded: string[] = [];
    let failure: unknown;
    let refusedId = '';
    for (let i = 0; i < 500 && failure === undefined; i += 1) {
      const c = { ...intent(), raw_arguments: { blob: 'x'.repeat(16_000), i } };
      try {
        j.activity.recordIntent(c);
        recorded.push(c.call_id);
      } catch (e) {
        failure = e;
        refusedId = c.call_id;
      }
    }
    assert.ok(failure !== undefined, 'the disk filled up');
    unavailable(failure);
    assert.match((failure as Error).message, /disk is full/);
    assert.equal(j.activity.getCall(refusedId), undefined);
    assert.equal(j.activity.listCalls({ limit: 1000 }).length, recorded.length);
    assert.equal(j.activity.verify().ok, true);
    j.close();
  });
});

describe('fail closed: corrupt or foreign files', () => {
  const cases: { name: string; damage: (dir: string) => void; refusal?: (e: unknown) => boolean }[] = [
    { name: 'garbage bytes', damage: (dir) => writeFileSync(join(dir, 'activity.db'), Buffer.alloc(8192, 0x5a)), refusal: damagedFile },
    {
      name: 'a database of another program',
      damage: (dir) => {
        rmSync(join(dir, 'activity.db'));
        const other = new Database(join(dir, 'activity.db'));
        other.exec('CREATE TABLE notes (x)');
        other.close();
        chmodSync(join(dir, 'activity.db'), 0o600);
      },
    },
    { name: 'the sessions journal swapped in', damage: (dir) => copyFileSync(join(dir, 'sessions.db'), join(dir, 'activity.db')) },
    {
      name: 'a newer schema version',
      damage: (dir) => {
        const db = new Database(join(dir, 'activity.db'));
        db.pragma('user_version = 99');
        db.close();
      },
    },
  ];
  for (const c of cases) {
    it(`${c.name}: the open refuses`, () => {
      const t = tempJournalDir();
      openJournals(t.dir).close();
      c.damage(t.dir);
      assert.throws(() => openJournals(t.dir), c.refusal ?? unavailable);
      t.cleanup();
    });
  }

  it('a damaged page in a populated journal: the next write refuses', () => {
    const t = tempJournalDir();
    const j = openJournals(t.dir);
    for (let i = 0; i < 200; i += 1) j.activity.recordRejected({ ...intent(), error_code: 'VALIDATION_FAILED', message: 'x'.repeat(200) });
    j.close();
    damagePage(join(t.dir, 'activity.db'), 'entries-root');
    assert.throws(() => {
      const k = openJournals(t.dir);
      try {
        k.activity.recordIntent(intent());
      } finally {
        k.close();
      }
    }, damagedFile);
    t.cleanup();
  });
});

describe('unsafe journal locations', () => {
  it('creates the directory 0700 and every file 0600 (including -wal and -shm)', () => {
    const t = tempJournalDir();
    const old = process.umask(0o022);
    try {
      const j = openJournals(t.dir);
      j.activity.recordIntent(intent());
      j.sessions.event(null, 'daemon_started', {});
      assert.equal(statSync(t.dir).mode & 0o777, 0o700);
      for (const f of ['activity.db', 'activity.db-wal', 'activity.db-shm', 'sessions.db', 'sessions.db-wal']) {
        assert.equal(statSync(join(t.dir, f)).mode & 0o777, 0o600, f);
      }
      j.close();
    } finally {
      process.umask(old);
      t.cleanup();
    }
  });

  const unsafeCases: { name: string; setup: (dir: string) => void }[] = [
    { name: 'a group-readable directory', setup: (dir) => mkdirSync(dir, { mode: 0o755 }) },
    {
      name: 'a symlinked directory',
      setup: (dir) => {
        mkdirSync(`${dir}-real`, { mode: 0o700 });
        symlinkSync(`${dir}-real`, dir);
      },
    },
    {
      name: 'a world-readable database file',
      setup: (dir) => {
        openJournals(dir).close();
        chmodSync(join(dir, 'activity.db'), 0o644);
      },
    },
    {
      name: 'a symlinked database file',
      setup: (dir) => {
        mkdirSync(dir, { mode: 0o700 });
        writeFileSync(`${dir}-elsewhere.db`, '');
        symlinkSync(`${dir}-elsewhere.db`, join(dir, 'sessions.db'));
      },
    },
  ];
  for (const c of unsafeCases) {
    it(`${c.name}: HOME_UNSAFE`, () => {
      const t = tempJournalDir();
      c.setup(t.dir);
      assert.throws(() => openJournals(t.dir), { code: 'HOME_UNSAFE' });
      t.cleanup();
    });
  }
});
