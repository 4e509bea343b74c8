/**
 * A way back from a lost or damaged journal (issue 25 §2), through the built
 * CLI and a real daemon against a loopback HTTP service that logs every
 * request with its Idempotency-Key: a backup of the journal directory, calls
 * made after it, then `postern anchor restore-journal BACKUP`:
 * - without the passphrase nothing is restored;
 * - with it the daemon starts; a key completed before the backup replays its
 *   stored result; a key completed in the gap is refused OUTCOME_UNKNOWN
 *   (side_effect_started null) and no second request leaves; a new key runs;
 *   the restore is journaled with its gap and the journals verify;
 * - `anchor release-key` lets one held key run again;
 * - with the current journal damaged, `audit salvage` copies what reads (and
 *   names the unreadable range), and a restore that could not read all of
 *   the gap refuses every key it does not know (and `doctor` says so) until
 *   `anchor close-gap`; with the anchor lost too, the gap's end is unknown
 *   and it is never taken as read whole.
 * The token is a canary: it never appears in any output.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { damagePage } from '../helpers/journal-damage.js';
import { crashTools } from '../helpers/crash-harness.js';

const TOKEN = canary('restore');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const k = (name: string): string => `${name}-${randomBytes(6).toString('hex')}`;

describe('restoring an older journal: the gap is journaled and its keys never run blindly', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let home: string;
  const done = k('before-backup');
  const inGap = k('in-gap');
  const pass = (): string[] => ['--passphrase-file', inst.passFile];
  const hits = (key: string): number => http.requests.filter((r) => r.headers.some(([n, v]) => n.toLowerCase() === 'idempotency-key' && v === key)).length;
  const backup = (): string => join(inst.sb.dir, 'journal-backup');

  /** One call with a key on a daemon started for it (and stopped after). */
  const withDaemon = async <T>(fn: (agent: Client) => Promise<T>): Promise<T> => {
    await inst.startDaemon();
    const agent = await inst.client();
    try {
      return await fn(agent);
    } finally {
      await agent.close();
      assert.equal(await inst.stopDaemon(), 0);
    }
  };
  const call = async (agent: Client, key: string): Promise<Result> => (await agent.callTool({ name: 'quick_write', arguments: { title: `t ${key}`, idempotency_key: key } })) as Result;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, tools: crashTools(false), target: { idempotency_header: true }, start: false }));
    home = inst.sb.home;
    await withDaemon(async (agent) => assert.equal((await call(agent, done)).isError, undefined));
    cpSync(join(home, 'journal'), backup(), { recursive: true });
    await withDaemon(async (agent) => assert.equal((await call(agent, inGap)).isError, undefined));
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('without the passphrase nothing is restored', async () => {
    const wrong = await inst.sb.file('wrong-pass', 'not-the-passphrase-0123\n');
    const r = await inst.sb.run(['anchor', 'restore-journal', backup(), '--yes', '--passphrase-file', wrong]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /VAULT_AUTH/);
    assert.deepEqual(readdirSync(home).filter((n) => n.startsWith('journal.')).sort(), ['journal.anchor', 'journal.checkpoints.jsonl'], 'nothing moved or staged');
  });

  it('restored: the daemon starts, the key from before replays, the key from the gap is OUTCOME_UNKNOWN with no second request, a new key runs', async () => {
    const r = await inst.sb.run(['anchor', 'restore-journal', backup(), '--yes', '--reason', 'disk replaced', ...pass()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /restored journal .* journaled as journal_restored/);
    assert.match(r.stdout, /gap: activity seq \d+–\d+; 1 key\(s\) read as claimed there are refused OUTCOME_UNKNOWN/);
    assert.doesNotMatch(r.stdout, /not all of the gap could be read/);
    assert.ok(readdirSync(home).some((n) => n.startsWith('journal.replaced-')), 'the replaced journal is kept');
    const fresh = k('new');
    await withDaemon(async (agent) => {
      const again = await call(agent, done);
      assert.equal(again.structuredContent?.['replayed'], true, JSON.stringify(again));
      assert.equal(hits(done), 1);
      const gap = await call(agent, inGap);
      assert.equal(gap.isError, true, JSON.stringify(gap));
      assert.equal(gap.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(gap));
      assert.equal(gap.structuredContent?.['side_effect_started'], null);
      assert.match(String(gap.structuredContent?.['message']), /older backup was restored[^]*postern anchor release-key/);
      assert.equal(hits(inGap), 1, 'no second request for the key completed in the gap');
      assert.equal((await call(agent, fresh)).isError, undefined);
      assert.equal(hits(fresh), 1);
    });
    const events = await inst.sb.run(['audit', 'session', '--daemon', '--json']);
    const restored = (JSON.parse(events.stdout) as { type: string; data: Record<string, unknown> }[]).find((e) => e.type === 'journal_restored');
    assert.ok(restored !== undefined, 'the restore is journaled');
    assert.equal(restored.data['complete'], true);
    assert.deepEqual(restored.data['keys'], [{ tool: 'quick_write', key: inGap }]);
    assert.equal(restored.data['reason'], 'disk replaced');
    const v = await inst.sb.run(['audit', 'verify', '--unlock', ...pass()]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });

  it('release-key: the operator checked the target, and the key runs', async () => {
    const r = await inst.sb.run(['anchor', 'release-key', 'quick_write', inGap, '--reason', 'checked: not there', ...pass()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /released key .*journaled as journal_key_released/);
    await withDaemon(async (agent) => assert.equal((await call(agent, inGap)).isError, undefined));
    assert.equal(hits(inGap), 2, 'the operator decided it runs');
  });

  it('a damaged journal: salvage copies what reads; a restore that cannot read all of the gap refuses unknown keys until close-gap', async () => {
    // Enough entries in the gap for the activity table to have several leaves.
    const many = Array.from({ length: 40 }, (_, i) => k(`many-${i}`));
    const pre = http.requests.length;
    await withDaemon(async (agent) => {
      for (const key of many) assert.equal((await call(agent, key)).isError, undefined);
    });
    assert.equal(http.requests.length, pre + many.length);
    damagePage(join(home, 'journal', 'activity.db'), 'entries-middle-leaf');
    const out = join(inst.sb.dir, 'salvaged.jsonl');
    const s = await inst.sb.run(['audit', 'salvage', join(home, 'journal'), '--out', out]);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /activity: \d+ entries salvaged; unreadable: seq \d+ to seq \d+/);
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.some((l) => l['journal'] === 'activity' && typeof l['unreadable'] === 'object'), 'the unreadable range is in the copy');
    assert.ok(lines.some((l) => l['journal'] === 'activity' && l['idempotency_key'] === many[0]), 'readable entries are in the copy');

    const r = await inst.sb.run(['anchor', 'restore-journal', backup(), '--yes', ...pass()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /not all of the gap could be read/);
    const unknown = k('unknown');
    await withDaemon(async (agent) => {
      const first = await call(agent, many[0]!);
      assert.equal(first.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(first));
      const fresh = await call(agent, unknown);
      assert.equal(fresh.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(fresh));
      assert.equal(fresh.structuredContent?.['side_effect_started'], null);
      assert.match(String(fresh.structuredContent?.['message']), /could not be read[^]*postern anchor close-gap/);
    });
    assert.equal(http.requests.length, pre + many.length, 'nothing reached the target');
    const doctor = await inst.sb.run(['doctor']);
    assert.match(doctor.stdout, /warning\s+journal files\s+.*gap holds \d+ key/, doctor.stdout);
    const closed = await inst.sb.run(['anchor', 'close-gap', '--yes', '--reason', 'checked the targets', ...pass()]);
    assert.equal(closed.code, 0, closed.stderr);
    await withDaemon(async (agent) => assert.equal((await call(agent, unknown)).isError, undefined));
    assert.equal(hits(unknown), 1);
    assert.ok(existsSync(join(home, 'journal', 'activity.db')));
    rmSync(out);
  });

  it('journal and anchor both lost: the vault only says where the journal was at its last save, so the gap is never taken as read whole', async () => {
    rmSync(join(home, 'journal'), { recursive: true });
    rmSync(join(home, 'journal.anchor'));
    const r = await inst.sb.run(['anchor', 'restore-journal', backup(), '--yes', ...pass()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /not all of the gap could be read/);
    const before = http.requests.length;
    await withDaemon(async (agent) => {
      assert.equal((await call(agent, done)).structuredContent?.['replayed'], true);
      const fresh = await call(agent, k('after-loss'));
      assert.equal(fresh.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(fresh));
    });
    assert.equal(http.requests.length, before, 'nothing reached the target');
  });
});
