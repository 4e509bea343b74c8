/**
 * Journal shipping against a real PostgreSQL (issue 27; test/helpers/postgres.ts):
 * two homes ship to one database — one by its daemon (config.yaml `ship`, the
 * connection string a postgres_url vault credential), one by `postern audit
 * ship` — and the team-wide queries and `audit verify --from` answer from it.
 * Then the faults: the server stopped and started (a network cut), killed -9,
 * and the daemon killed -9, all while entries wait to be shipped; afterwards
 * every journal is in the database with no gap and no duplicate. Last, rows
 * edited, removed and reordered by the database's owner are named by verify.
 * The API token and the database password are canaries.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { postgresSkip, startPostgres, type RealPostgres } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { openJournals } from '../../src/journal/index.js';

const TOKEN = `CANARY-ship-${randomBytes(12).toString('hex')}`;
const DB_PASSWORD = `CANARYpw${randomBytes(10).toString('hex')}`;
const note = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
const catalog = (origin: string): unknown => ({
  targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
  tools: { notes_write: { description: 'A write.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: note, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }] } },
});

interface Status {
  state: string;
  home_id: string | null;
  remote: { activity: number; sessions: number } | null;
  local: { activity: number; sessions: number } | null;
  last_error: { code: string; message: string } | null;
}

describe('journal shipping to a real PostgreSQL', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let http: FakeHttpServer;
  let a: Installation; // ships from its daemon
  let b: Installation; // ships with `postern audit ship`
  let agentA: Client;
  let adminUrl: string;
  let shipUrl: string;

  const statusOf = (inst: Installation): Status | null => {
    try {
      return JSON.parse(readFileSync(join(inst.sb.home, 'run', 'ship.json'), 'utf8')) as Status;
    } catch {
      return null;
    }
  };
  const heads = (inst: Installation): { activity: number; sessions: number } => {
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      const f = j.facts();
      return { activity: f.activity.head.seq, sessions: f.sessions.head.seq };
    } finally {
      j.close();
    }
  };
  /** The daemon's shipper says the database holds every local entry (as of now). */
  const caughtUp = async (inst: Installation): Promise<void> => {
    await waitFor(
      () => {
        const s = statusOf(inst);
        const h = heads(inst);
        return s?.state === 'caught_up' && s.remote?.activity === h.activity && s.remote.sessions === h.sessions;
      },
      () => `home A to catch up: ${JSON.stringify(statusOf(inst))} vs ${JSON.stringify(heads(inst))}\n${inst.daemonLog}`,
    );
  };
  /** Per journal: the database's rows of a home are exactly seqs base+1 … local head, once each. */
  const assertComplete = async (inst: Installation, homeId: string): Promise<void> => {
    const h = heads(inst);
    const r = await db.admin(`SELECT journal, count(*)::int AS n, count(DISTINCT seq)::int AS d, min(seq)::int AS lo, max(seq)::int AS hi FROM postern_entries WHERE home_id = '${homeId}' GROUP BY journal ORDER BY journal`, 'team');
    const rows = Object.fromEntries((r.rows as { journal: string; n: number; d: number; lo: number; hi: number }[]).map((x) => [x.journal, x]));
    for (const name of ['activity', 'sessions'] as const) {
      const x = rows[name];
      assert.ok(x !== undefined, `${name} shipped`);
      assert.deepEqual({ n: x.n, distinct: x.d, lo: x.lo, hi: x.hi }, { n: h[name], distinct: h[name], lo: 1, hi: h[name] }, `${name}: no gap, no duplicate`);
    }
  };
  const write = async (agent: Client, title: string, inst: Installation = a): Promise<void> => {
    const r = await agent.callTool({ name: 'notes_write', arguments: { title, idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
    assert.equal(r.isError, undefined, `${JSON.stringify(r)}\n${inst.daemonLog}`);
  };
  const run = async (inst: Installation, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => inst.sb.run(args);

  before(async () => {
    db = await startPostgres();
    await db.admin(`CREATE ROLE ship LOGIN PASSWORD '${DB_PASSWORD}'`);
    await db.admin('CREATE DATABASE team');
    adminUrl = db.url('admin', 'team');
    shipUrl = `postgresql://ship:${DB_PASSWORD}@/team?host=${encodeURIComponent(db.socketDir)}`;
    http = await startFakeHttp();
    a = await install({
      secrets: [
        { name: 'api-token', kind: 'http_bearer', value: TOKEN },
        { name: 'ship', kind: 'postgres_url', value: shipUrl },
      ],
      // One entry per transaction: a backlog takes many commits to ship, so faults land mid-way.
      config: { ship: { enabled: true, home_name: 'laptop-a', batch: 1, retry_seconds: 0.05 } },
    });
    b = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: TOKEN }], config: { ship: { home_name: 'laptop-b' } } });
    for (const inst of [a, b]) await inst.acceptCatalog(catalog(http.origin));
    const init = await run(a, ['audit', 'ship', '--init-schema', '--grant', 'ship', '--to', adminUrl]);
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /^the postern_\* tables are ready in .*\/team; ship may insert and select, nothing more$/m);
  });

  after(async () => {
    for (const inst of [a, b]) {
      inst.sb.assertNeverPrinted(TOKEN, 'the API token');
      inst.sb.assertNeverPrinted(DB_PASSWORD, 'the database password');
      assert.ok(!(inst.daemonLog + JSON.stringify(statusOf(inst))).includes(DB_PASSWORD), 'the database password stays out of the log and ship.json');
      await inst.cleanup();
    }
    await http.close();
    await db.stop();
  });

  it('two homes ship to one database: the daemon by itself, the other with `audit ship`', async () => {
    await a.startDaemon();
    agentA = await a.client();
    for (let i = 0; i < 3; i++) await write(agentA, `a-${i}`);
    await caughtUp(a);

    await b.startDaemon();
    const agentB = await b.client();
    for (let i = 0; i < 2; i++) await write(agentB, `b-${i}`, b);
    await agentB.close();
    assert.equal(await b.stopDaemon(), 0);
    const shipped = await run(b, ['audit', 'ship', '--to', shipUrl, '--json']);
    assert.equal(shipped.code, 0, shipped.stderr);
    const p = JSON.parse(shipped.stdout) as { home_id: string; remote: { activity: number }; local: { activity: number }; shipped: { checkpoints: number } };
    assert.equal(p.remote.activity, p.local.activity);
    assert.ok(p.shipped.checkpoints > 0, 'the signed checkpoints are shipped with the entries');
    // Again: nothing new, nothing changed (idempotent).
    const again = JSON.parse((await run(b, ['audit', 'ship', '--to', shipUrl, '--json'])).stdout) as { shipped: { activity: number; sessions: number } };
    assert.deepEqual(again.shipped, { activity: 0, sessions: 0, checkpoints: 0 });
    await assertComplete(b, p.home_id);
    await assertComplete(a, statusOf(a)!.home_id!);
  });

  it('answers team-wide queries from the database, with the home on every row', async () => {
    const all = await run(a, ['audit', 'activity', '--from', shipUrl, '--json']);
    assert.equal(all.code, 0, all.stderr);
    const calls = JSON.parse(all.stdout) as { home: string; call: { tool: string; raw_arguments?: unknown } }[];
    assert.deepEqual([...new Set(calls.map((c) => c.home))].sort(), ['laptop-a', 'laptop-b']);
    assert.equal(calls.length, 5);
    const onlyB = JSON.parse((await run(a, ['audit', 'activity', '--from', shipUrl, '--home', 'laptop-b', '--json'])).stdout) as { home: string }[];
    assert.deepEqual(onlyB.map((c) => c.home), ['laptop-b', 'laptop-b']);
    const table = await run(a, ['audit', 'activity', '--from', shipUrl]);
    assert.match(table.stdout, /^HOME\s+TIME\s+CALL\s+SESSION\s+TOOL/m);
    assert.match(table.stdout, /^laptop-a\s+\S+\s+\S+\s+\S+\s+notes_write/m);
    const sessions = JSON.parse((await run(a, ['audit', 'sessions', '--from', shipUrl, '--json'])).stdout) as { home: string }[];
    assert.ok(sessions.some((s) => s.home === 'laptop-b') && sessions.some((s) => s.home === 'laptop-a'));
    const one = calls.find((c) => c.home === 'laptop-b') as unknown as { call: { call_id: string } };
    const show = await run(a, ['audit', 'show', one.call.call_id.slice(0, 10), '--from', shipUrl]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^home: laptop-b \(/m);
    const secret = await run(a, ['audit', 'find-secret', 'api-token', '--from', shipUrl, '--json']);
    assert.equal(secret.code, 0, secret.stderr);
    // The fake target echoes the request headers: each call's result held the token (redacted, recorded).
    const exposed = JSON.parse(secret.stdout) as { exposed_calls: number; calls: { home: string }[] };
    assert.equal(exposed.exposed_calls, 5);
    assert.deepEqual([...new Set(exposed.calls.map((c) => c.home))].sort(), ['laptop-a', 'laptop-b']);
  });

  it('each filter answers from the database what the home answers locally, the same --json plus its home', async () => {
    const bId = (JSON.parse((await run(b, ['audit', 'ship', '--to', shipUrl, '--json'])).stdout) as { home_id: string }).home_id;
    const json = async (args: string[]): Promise<unknown> => {
      const r = await run(b, args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      return JSON.parse(r.stdout) as unknown;
    };
    /** What `--from --home laptop-b` printed, each row's home checked and taken off. */
    const untagged = (v: unknown): unknown => {
      const off = (row: Record<string, unknown>): Record<string, unknown> => {
        const { home, home_id, ...rest } = row;
        assert.deepEqual({ home, home_id }, { home: 'laptop-b', home_id: bId });
        return rest;
      };
      if (Array.isArray(v)) return v.map((x) => off(x as Record<string, unknown>));
      const o = v as Record<string, unknown>;
      return Array.isArray(o['calls']) ? { ...o, calls: (o['calls'] as Record<string, unknown>[]).map(off) } : off(o);
    };
    const both = async (args: string[]): Promise<void> => {
      const local = await json(args);
      assert.deepEqual(untagged(await json([...args, '--from', shipUrl, '--home', 'laptop-b'])), local, args.join(' '));
    };
    const calls = (await json(['audit', 'activity', '--json'])) as { journaled_at: string; call: { call_id: string; session_id: string; idempotency_key: string } }[];
    const sessions = (await json(['audit', 'sessions', '--json'])) as { session_id: string; started_at: string }[];
    assert.ok(calls.length === 2 && sessions.length > 0);
    const [newest, oldest] = calls as [(typeof calls)[0], (typeof calls)[0]];
    for (const filter of [
      [],
      ['--tool', 'notes_write'],
      ['--tool', 'no_such_tool'],
      ['--session', newest.call.session_id.slice(0, 8)],
      ['--key', oldest.call.idempotency_key],
      ['--error', 'APPROVAL_DENIED'],
      ['--since', newest.journaled_at],
      ['--until', newest.journaled_at],
      ['--since', oldest.journaled_at, '--until', newest.journaled_at, '--tool', 'notes_write'],
      ['--limit', '1'],
    ]) {
      await both(['audit', 'activity', ...filter, '--json']);
    }
    for (const filter of [[], ['--since', sessions[0]!.started_at], ['--limit', '1']]) await both(['audit', 'sessions', ...filter, '--json']);
    await both(['audit', 'show', oldest.call.call_id, '--json']);
    await both(['audit', 'timeline', newest.call.session_id, '--json']);
    await both(['audit', 'timeline', newest.call.session_id.slice(0, 8), '--limit', '2', '--json']);
    await both(['audit', 'find-secret', 'api-token', '--json']);
    await both(['audit', 'find-secret', 'api-token', '--since', newest.journaled_at, '--json']);

    // Across both homes: merged newest first; the table is the local one with the home first.
    const all = (await json(['audit', 'activity', '--from', shipUrl, '--json'])) as { journaled_at: string; home: string }[];
    assert.deepEqual(all.map((c) => c.journaled_at), all.map((c) => c.journaled_at).sort().reverse());
    const local = (await run(b, ['audit', 'activity'])).stdout.trimEnd().split('\n');
    const team = (await run(b, ['audit', 'activity', '--from', shipUrl, '--home', 'laptop-b'])).stdout.trimEnd().split('\n');
    assert.deepEqual(team.map((l) => l.replace(/^\S+\s+/, '')), local.map((l) => l.trimEnd()), 'the rows of the local table, after the HOME column');
    const none = await run(b, ['audit', 'show', 'no-such-call', '--from', shipUrl]);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /no call no-such-call in the shipped journals/);
    const unknown = await run(b, ['audit', 'activity', '--from', shipUrl, '--home', 'nowhere']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no home nowhere in the database/);
  });

  it('verify --from checks every shipped chain against its signed checkpoints', async () => {
    const v = await run(a, ['audit', 'verify', '--from', shipUrl]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.match(v.stdout, /^home laptop-a \(\w+\): ok$/m);
    assert.match(v.stdout, /^home laptop-b \(\w+\): ok$/m);
    assert.match(v.stdout, /^ {2}checkpoint: ok: journal matches checkpoint #\d+/m);
  });

  it('the shipping role can insert and read, never update or delete', async () => {
    const c = new pg.Client({ connectionString: shipUrl });
    await c.connect();
    try {
      await assert.rejects(c.query("UPDATE postern_entries SET row = 'x'"), /permission denied/);
      await assert.rejects(c.query('DELETE FROM postern_entries'), /permission denied/);
      await assert.rejects(c.query('TRUNCATE postern_checkpoints'), /permission denied/);
    } finally {
      await c.end();
    }
  });

  it('a network cut: calls go on, the error shows, shipping resumes with no gap and no duplicate', async () => {
    db.cut();
    for (let i = 0; i < 5; i++) await write(agentA, `cut-${i}`);
    await waitFor(() => statusOf(a)?.state === 'failing', () => `the cut to show: ${JSON.stringify(statusOf(a))}`);
    assert.equal(statusOf(a)?.last_error?.code, 'SHIP_UNAVAILABLE');
    const st = await run(a, ['status']);
    assert.match(st.stdout, /^shipping: failing/m);
    // The operator channel (the TUI's status line) says so too, and stops once it ships again.
    const op = await a.operator();
    try {
      assert.match(String((await op.request('status', {})).ship_problem), /^SHIP_UNAVAILABLE: cannot (connect|ship) to .*\/team: /);
      db.restore();
      await caughtUp(a);
      assert.equal((await op.request('status', {})).ship_problem, null);
    } finally {
      op.close();
      if (!db.running()) db.restore();
    }
    await assertComplete(a, statusOf(a)!.home_id!);
  });

  /** The home's activity entries in the database. */
  const shipped = async (homeId: string): Promise<number> => Number(((await db.admin(`SELECT count(*)::int AS n FROM postern_entries WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team')).rows[0] as { n: number }).n);
  /**
   * Holds the shipper mid-backlog, deterministically: an admin transaction inserts (and keeps
   * uncommitted) a row at the activity seq two past what the home's journal holds now, so the
   * shipper, one entry per transaction, ships the next two entries and then waits on that key.
   * `release` rolls the transaction back (the shipper's own row then goes in).
   */
  const holdAfterTwo = async (homeId: string): Promise<{ shippedBefore: number; release(): Promise<void> }> => {
    await caughtUp(a);
    const shippedBefore = await shipped(homeId);
    const lock = new pg.Client({ connectionString: adminUrl });
    lock.on('error', () => undefined); // the server may be killed under it
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query(`INSERT INTO postern_entries (home_id, journal, seq, at, hash, row) VALUES ($1, 'activity', $2, 'hold', 'hold', 'hold')`, [homeId, heads(a).activity + 3]);
    return { shippedBefore, release: async () => void (await lock.query('ROLLBACK').catch(() => undefined), await lock.end().catch(() => undefined)) };
  };

  it('PostgreSQL killed -9 while a backlog ships: no gap, no duplicate after it is back', async () => {
    const homeId = statusOf(a)!.home_id!;
    const held = await holdAfterTwo(homeId);
    try {
      for (let i = 0; i < 10; i++) await write(agentA, `kill-db-${i}`);
      await waitFor(async () => (await shipped(homeId)) === held.shippedBefore + 2, 'the shipper to stop at the held seq');
      assert.ok(heads(a).activity > (await shipped(homeId)) + 10, 'a backlog is left');
      await db.kill();
    } finally {
      await held.release();
    }
    db.restore();
    await caughtUp(a);
    await assertComplete(a, homeId);
  });

  it('the daemon killed -9 while a backlog ships: the next start resumes from the database', async () => {
    const homeId = statusOf(a)!.home_id!;
    const held = await holdAfterTwo(homeId);
    try {
      for (let i = 0; i < 10; i++) await write(agentA, `kill-daemon-${i}`);
      await waitFor(async () => (await shipped(homeId)) === held.shippedBefore + 2, 'the shipper to stop at the held seq');
      await agentA.close();
      await a.stopDaemon('SIGKILL');
    } finally {
      await held.release();
    }
    await a.startDaemon();
    agentA = await a.client();
    await write(agentA, 'after-restart');
    await caughtUp(a);
    await assertComplete(a, homeId);
    const v = await run(a, ['audit', 'verify', '--from', shipUrl, '--home', 'laptop-a']);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });

  it('rows edited, removed or reordered by the database owner are named by verify --from', async () => {
    const homeB = (await db.admin("SELECT home_id FROM postern_homes WHERE name = 'laptop-b'", 'team')).rows[0] as { home_id: string };
    const id = homeB.home_id;
    // Edited: a title changed in place (its hash no longer matches).
    await db.admin(`UPDATE postern_entries SET row = replace(row, 'b-0', 'b-X') WHERE home_id = '${id}' AND journal = 'activity' AND row LIKE '%b-0%'`, 'team');
    const edited = await run(a, ['audit', 'verify', '--from', shipUrl, '--home', 'laptop-b']);
    assert.equal(edited.code, 1, edited.stdout);
    assert.match(edited.stdout, /^ {2}activity journal: BROKEN at seq \d+: .*\(hash_mismatch\)/m);
    // Removed: a sessions row from the middle.
    await db.admin(`DELETE FROM postern_entries WHERE home_id = '${id}' AND journal = 'sessions' AND seq = 2`, 'team');
    const removed = await run(a, ['audit', 'verify', '--from', shipUrl, '--home', 'laptop-b', '--json']);
    assert.equal(removed.code, 1);
    const j = JSON.parse(removed.stdout) as { homes: { sessions: { ok: boolean; first_bad_seq: number; reason: string } }[] };
    assert.deepEqual({ seq: j.homes[0]!.sessions.first_bad_seq, reason: j.homes[0]!.sessions.reason }, { seq: 2, reason: 'missing_entry' });
    // Reordered: laptop-a's activity rows 1 and 2 swapped.
    const homeA = statusOf(a)!.home_id!;
    await db.admin(`UPDATE postern_entries e SET row = o.row FROM postern_entries o WHERE e.home_id = '${homeA}' AND o.home_id = e.home_id AND e.journal = 'activity' AND o.journal = 'activity' AND ((e.seq = 1 AND o.seq = 2) OR (e.seq = 2 AND o.seq = 1))`, 'team');
    const swapped = await run(a, ['audit', 'verify', '--from', shipUrl, '--home', 'laptop-a']);
    assert.equal(swapped.code, 1, swapped.stdout);
    assert.match(swapped.stdout, /^ {2}activity journal: row at seq 1: .*\(reordered\)$/m);
    assert.match(swapped.stdout, /^ {2}activity journal: BROKEN at seq 1: /m);
  });

  it('a row that matches a query but does not read as an entry is left out, and the CLI says so on stderr', async () => {
    const before = JSON.parse((await run(a, ['audit', 'activity', '--from', shipUrl, '--home', 'laptop-b', '--json'])).stdout) as { call: { call_id: string } }[];
    assert.ok(before.length > 1);
    const id = ((await db.admin("SELECT home_id FROM postern_homes WHERE name = 'laptop-b'", 'team')).rows[0] as { home_id: string }).home_id;
    // Its kind, tool and session still say "a call", but its body is no longer JSON.
    await db.admin(
      `UPDATE postern_entries SET row = jsonb_set(row::jsonb, '{body}', '"{broken"')::text WHERE home_id = '${id}' AND journal = 'activity' AND call_id = '${before[0]!.call.call_id}' AND kind = 'intent'`,
      'team',
    );
    const after = await run(a, ['audit', 'activity', '--from', shipUrl, '--home', 'laptop-b', '--json']);
    assert.equal(after.code, 0, after.stderr);
    const calls = JSON.parse(after.stdout) as { call: { call_id: string } }[];
    assert.deepEqual(calls.map((c) => c.call.call_id), before.slice(1).map((c) => c.call.call_id));
    assert.match(after.stderr, /note: 1 shipped row matched but did not read as journal entries and is left out; `postern audit verify --from` names them/);
    const clean = await run(a, ['audit', 'sessions', '--from', shipUrl, '--home', 'laptop-b']);
    assert.equal(clean.stderr, '');
  });

  it('entries pruned before they were shipped: SHIP_GAP, then --accept-gap records it signed, ships on, and verify --from names it', async () => {
    const c = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: TOKEN }], config: { ship: { home_name: 'laptop-c' } } });
    try {
      await c.acceptCatalog(catalog(http.origin));
      await c.startDaemon();
      assert.equal(await c.stopDaemon(), 0);
      const first = await run(c, ['audit', 'ship', '--to', shipUrl]);
      assert.equal(first.code, 0, first.stderr);
      // More entries (the daemon's start and stop), pruned before they were shipped.
      await c.startDaemon();
      assert.equal(await c.stopDaemon(), 0);
      const pruned = await run(c, ['audit', 'prune', '--before', '0s', '--yes', '--passphrase-file', c.passFile]);
      assert.equal(pruned.code, 0, pruned.stderr);
      const stopped = await run(c, ['audit', 'ship', '--to', shipUrl]);
      assert.equal(stopped.code, 1);
      assert.match(stopped.stderr, /SHIP_GAP/);
      assert.match(stopped.stderr, /sessions entries \d+ to \d+ were pruned before they were shipped .*--accept-gap/);
      const accepted = await run(c, ['audit', 'ship', '--to', shipUrl, '--accept-gap', '--passphrase-file', c.passFile]);
      assert.equal(accepted.code, 0, accepted.stderr);
      assert.match(accepted.stdout, /^accepted a gap: sessions entries \d+ to \d+ were pruned here before they were shipped; the database records it, signed by SHA256:/m);
      const again = await run(c, ['audit', 'ship', '--to', shipUrl, '--json']);
      assert.equal(again.code, 0, again.stderr);
      const v = await run(c, ['audit', 'verify', '--from', shipUrl, '--home', 'laptop-c']);
      assert.equal(v.code, 0, v.stdout);
      assert.match(v.stdout, /^ {2}sessions journal: entries \d+ to \d+: ACCEPTED GAP: pruned on the home before they were shipped; accepted at \S+, signed by SHA256:/m);
      const key = (await run(c, ['audit', 'key', '--passphrase-file', c.passFile])).stdout;
      assert.ok(key.includes(/signed by (SHA256:\S+)/.exec(v.stdout)![1]!), 'signed by the home\'s checkpoint key');
    } finally {
      c.sb.assertNeverPrinted(TOKEN, 'the API token');
      await c.cleanup();
    }
  });
});
