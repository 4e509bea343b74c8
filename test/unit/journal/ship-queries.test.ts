/**
 * The team queries (src/journal/ship/queries.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts): two homes' journals shipped, then every filter
 * the local audit takes asked of the database and of each local journal —
 * the same calls, sessions, timelines and exposures, in the same order, the
 * homes merged newest first and each row tagged with its home. A database
 * made by the first schema, filled by a shipper that knew no copy columns,
 * answers the same after `--init-schema` again. Last, each query's plan on
 * tens of thousands of entries (ANALYZEd) uses the index it is meant to, and
 * never a Seq Scan of postern_entries: a dropped index fails here.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { openJournals, sessionTimeline, type CallFilter, type CallView, type Journals } from '../../../src/journal/index.js';
import { MAX_LIMIT } from '../../../src/journal/filters.js';
import { shipPass } from '../../../src/journal/ship/shipper.js';
import { SHIP_SCHEMA, TEAM_INDEXES, shipGrants } from '../../../src/journal/ship/schema.js';
import { connectShip } from '../../../src/journal/ship/connect.js';
import {
  callByIdQuery,
  callByPrefixQuery,
  resolveTeamSession,
  sessionHomes,
  teamCalls,
  teamCallsQuery,
  teamExposures,
  teamSessions,
  teamTimeline,
} from '../../../src/journal/ship/queries.js';
import { ManualClock } from '../../helpers/clock.js';
import { postgresSkip, startPostgres, type RealPostgres } from '../../helpers/postgres.js';
import { callsPerHome, describePlan, fillShipped, planOf, teamPlanCases } from '../../helpers/team-plans.js';
import { callRecord, httpTarget, tempJournalDir } from './helpers.js';

interface Home {
  readonly j: Journals;
  readonly id: string;
  cleanup(): void;
}

const TOKEN_EXPOSED = [{ credential: 'api-token', fingerprint: null, in: ['result' as const] }];

/** A home whose clock starts at `start`: two sessions, calls of two tools, keys, a rejection, an error, exposures. */
function home(tag: string, start: string): Home {
  const t = tempJournalDir();
  const clock = new ManualClock(start);
  const j = openJournals(t.dir, { clock });
  const step = (): void => clock.advance(1000);
  for (const s of [1, 2]) {
    const session_id = `${tag}${s}-session`;
    j.sessions.startSession({ session_id, transport: 'stdio', client_name: `agent-${tag}`, client_version: '1', protocol_version: null, peer_pid: s, peer_uid: 1000, run_id: null, agent_release: null });
    step();
    j.sessions.event(session_id, 'session_identified', { run_id: `run-${tag}-${s}`, agent_release: 'r1' });
    for (let i = 0; i < 4; i++) {
      step();
      const c = callRecord({ session_id, tool: i % 2 === 0 ? 'deploy_preview' : 'create_issue', idempotency_key: i === 1 ? `key-${tag}-${s}` : null, args_digest: 'sha256:0001', at: clock.now().toISOString() });
      if (i === 3 && s === 1) {
        j.activity.recordRejected({ ...c, error_code: 'APPROVAL_DENIED', message: 'denied' });
        continue;
      }
      j.activity.recordIntent({ ...c, target: httpTarget });
      step();
      if (i === 2) j.activity.recordOutcome(c.call_id, { status: 'error', side_effect_started: true, duration_ms: 2, error_code: 'TARGET_ERROR' });
      else j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { i }, ...(i === 0 ? { exposures: TOKEN_EXPOSED } : {}) });
    }
    step();
    j.sessions.event(null, 'lock', { by: `test-${tag}` });
    step();
    if (s === 1) j.sessions.endSession(session_id, 'client_closed');
  }
  return {
    j,
    id: j.facts().activity.journal_id!,
    cleanup: () => {
      j.close();
      t.cleanup();
    },
  };
}

/** The local lists of several homes merged as the database orders them: newest first, then seq, then home id (descending). */
function merged<T>(per: readonly { id: string; rows: readonly T[] }[], at: (r: T) => string, seq: (r: T) => number, limit: number): { home_id: string; value: T }[] {
  const key = (x: { home_id: string; value: T }): [string, number, string] => [at(x.value), seq(x.value), x.home_id];
  return per
    .flatMap((p) => p.rows.map((value) => ({ home_id: p.id, value })))
    .sort((x, y) => {
      const [a1, s1, h1] = key(x);
      const [a2, s2, h2] = key(y);
      return a1 !== a2 ? (a1 < a2 ? 1 : -1) : s1 !== s2 ? s2 - s1 : h1 < h2 ? 1 : h1 > h2 ? -1 : 0;
    })
    .slice(0, limit);
}

/** The first schema's tables (before the copy columns and postern_gaps), as a database made then holds them, and its grants below. */
const FIRST_SCHEMA = `
CREATE TABLE postern_homes (home_id text PRIMARY KEY, name text NOT NULL, public_key text, first_shipped_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE postern_bases (home_id text NOT NULL, journal text NOT NULL CHECK (journal IN ('activity', 'sessions')), base text NOT NULL, PRIMARY KEY (home_id, journal));
CREATE TABLE postern_entries (home_id text NOT NULL, journal text NOT NULL CHECK (journal IN ('activity', 'sessions')), seq bigint NOT NULL CHECK (seq > 0),
  at text NOT NULL, hash text NOT NULL, row text NOT NULL, shipped_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (home_id, journal, seq));
CREATE INDEX postern_entries_at ON postern_entries (journal, at);
CREATE TABLE postern_checkpoints (home_id text NOT NULL, position bigint NOT NULL CHECK (position >= 0), line text NOT NULL, shipped_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (home_id, position));
`;

describe('team queries answered in a real PostgreSQL', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let client: pg.Client;
  let a: Home;
  let b: Home;
  const ship = async (c: pg.Client, h: Home, name: string): Promise<void> => {
    await shipPass(c, { journals: h.j, checkpointsPath: '/nonexistent/checkpoints.jsonl', homeName: name });
  };

  before(async () => {
    db = await startPostgres();
    await db.admin('CREATE ROLE shipper LOGIN');
    await db.admin('CREATE DATABASE team');
    await db.admin(SHIP_SCHEMA + shipGrants('shipper'), 'team');
    // B's clock half a second after A's: the homes' calls interleave in time.
    a = home('a', '2031-05-01T00:00:00.000Z');
    b = home('b', '2031-05-01T00:00:00.500Z');
    client = await connectShip(db.url('shipper', 'team'));
    await ship(client, a, 'laptop-a');
    await ship(client, b, 'laptop-b');
  });
  after(async () => {
    await client?.end();
    a?.cleanup();
    b?.cleanup();
    await db?.stop();
  });

  const FILTERS: readonly [string, CallFilter][] = [
    ['no filter', {}],
    ['--tool', { tool: 'create_issue' }],
    ['--session', { session_id: 'a2-session' }],
    ['--key', { idempotency_key: 'key-b-1' }],
    ['--error (a rejection and an outcome)', { error_code: 'TARGET_ERROR' }],
    ['--error APPROVAL_DENIED', { error_code: 'APPROVAL_DENIED' }],
    ['--since', { since: '2031-05-01T00:00:08.000Z' }],
    ['--until', { until: '2031-05-01T00:00:08.000Z' }],
    ['--since --until --tool', { since: '2031-05-01T00:00:03.000Z', until: '2031-05-01T00:00:15.000Z', tool: 'deploy_preview' }],
    ['--limit', { limit: 3 }],
    ['nothing matches', { tool: 'no_such_tool' }],
  ];

  for (const [name, filter] of FILTERS) {
    it(`activity ${name}: what each local journal answers, merged newest first, each row with its home`, async () => {
      const local = (h: Home): CallView[] => h.j.activity.listCalls(filter);
      for (const h of [a, b]) assert.deepEqual(await teamCalls(client, teamCallsQuery(filter, [h.id])), local(h).map((value) => ({ home_id: h.id, value })), `--home ${h.id}`);
      const expected = merged([{ id: a.id, rows: local(a) }, { id: b.id, rows: local(b) }], (c) => c.journaled_at, (c) => c.seq, filter.limit ?? 100);
      const all = await teamCalls(client, teamCallsQuery(filter, undefined));
      assert.deepEqual(all, expected);
      if (name === 'no filter') assert.deepEqual(new Set(all.map((c) => c.home_id)), new Set([a.id, b.id]), 'both homes, interleaved');
    });
  }

  it('sessions, --since and --limit: the local rows merged newest first', async () => {
    for (const filter of [{}, { since: '2031-05-01T00:00:10.000Z' }, { limit: 3 }]) {
      const expected = merged([{ id: a.id, rows: a.j.sessions.listSessions(filter) }, { id: b.id, rows: b.j.sessions.listSessions(filter) }], (s) => s.started_at, (s) => s.seq, filter.limit ?? 100);
      assert.deepEqual(await teamSessions(client, filter, undefined), expected, JSON.stringify(filter));
      assert.deepEqual(await teamSessions(client, filter, [b.id]), b.j.sessions.listSessions(filter).map((value) => ({ home_id: b.id, value })));
    }
  });

  it('show: a call by its id or a prefix, as the local journal shows it', async () => {
    const call = b.j.activity.listCalls({ limit: 1 })[0]!;
    assert.deepEqual(await teamCalls(client, callByIdQuery(call.call.call_id, undefined, 2)), [{ home_id: b.id, value: b.j.activity.getCall(call.call.call_id) }]);
    assert.deepEqual(await teamCalls(client, callByPrefixQuery(call.call.call_id.slice(0, call.call.call_id.length - 2), undefined, 2)), [{ home_id: b.id, value: call }]);
    // Every call id starts with `call-`: a prefix of several calls returns several (the CLI says so).
    assert.equal((await teamCalls(client, callByPrefixQuery('call-', undefined, 2))).length, 2);
    // LIKE's wildcards in what is typed are taken as they are.
    assert.deepEqual(await teamCalls(client, callByPrefixQuery('call_', undefined, 2)), []);
    assert.deepEqual(await teamCalls(client, callByIdQuery('no-such-call', undefined, 2)), []);
  });

  it('timeline: the local timeline of a session, closed or still open, from its one home', async () => {
    for (const [h, sid] of [[a, 'a1-session'], [a, 'a2-session'], [b, 'b1-session']] as const) {
      assert.deepEqual(await sessionHomes(client, sid, undefined), [h.id]);
      assert.deepEqual(await teamTimeline(client, sid, h.id), sessionTimeline(h.j, sid, MAX_LIMIT), sid);
      assert.deepEqual(await teamTimeline(client, sid, h.id, 2), sessionTimeline(h.j, sid, 2), `${sid}, a limit of 2`);
    }
    assert.equal(await teamTimeline(client, 'a1-session', b.id), undefined);
    assert.deepEqual(await sessionHomes(client, 'a1-session', [b.id]), []);
  });

  it('a session id prefix resolves across the homes as locally; one several sessions share is ambiguous', async () => {
    assert.equal(await resolveTeamSession(client, 'b2', undefined), 'b2-session');
    assert.equal(await resolveTeamSession(client, 'a1-session', undefined), 'a1-session');
    assert.deepEqual(await resolveTeamSession(client, 'b', undefined), { ambiguous: 'b' });
    assert.deepEqual(await resolveTeamSession(client, 'b', [b.id]), { ambiguous: 'b' });
    assert.equal(await resolveTeamSession(client, 'a', [b.id]), 'a');
    assert.equal(await resolveTeamSession(client, 'nothing', undefined), 'nothing');
  });

  it('find-secret: the entries that recorded an exposure of the credential, per home, in journal order', async () => {
    const exposed = await teamExposures(client, 'api-token', undefined, undefined);
    for (const h of [a, b]) assert.deepEqual(exposed.get(h.id), [...h.j.activity.exposures()], h.id);
    assert.deepEqual([...(await teamExposures(client, 'api-token', undefined, [a.id])).keys()], [a.id]);
    assert.equal((await teamExposures(client, 'other-token', undefined, undefined)).size, 0);
    const since = '2031-05-01T00:00:12.000Z';
    assert.deepEqual((await teamExposures(client, 'api-token', since, [a.id])).get(a.id), [...a.j.activity.exposures()].filter((e) => e.at >= since));
  });

  it('a row that is not an entry gets no copies and is left out of the answers; the insert is not refused', async () => {
    await db.admin(`INSERT INTO postern_entries (home_id, journal, seq, at, hash, row) VALUES ('${a.id}', 'activity', 9999, 'x', 'x', 'not json')`, 'team');
    const r = await db.admin(`SELECT kind, call_id FROM postern_entries WHERE home_id = '${a.id}' AND seq = 9999`, 'team');
    assert.deepEqual(r.rows, [{ kind: null, call_id: null }]);
    assert.deepEqual(await teamCalls(client, teamCallsQuery({}, [a.id])), a.j.activity.listCalls({}).map((value) => ({ home_id: a.id, value })));
    await db.admin(`DELETE FROM postern_entries WHERE home_id = '${a.id}' AND seq = 9999`, 'team');
  });

  it('a database made by the first schema answers the same after --init-schema again (the copies backfilled), twice', async () => {
    await db.admin('CREATE DATABASE firstschema');
    await db.admin(`${FIRST_SCHEMA}GRANT USAGE ON SCHEMA public TO shipper; GRANT SELECT, INSERT ON postern_homes, postern_bases, postern_entries, postern_checkpoints TO shipper;`, 'firstschema');
    const old = await connectShip(db.url('shipper', 'firstschema'));
    try {
      await ship(old, a, 'laptop-a');
      await db.admin(SHIP_SCHEMA, 'firstschema');
      await db.admin(SHIP_SCHEMA + shipGrants('shipper'), 'firstschema');
      for (const [, filter] of FILTERS) assert.deepEqual(await teamCalls(old, teamCallsQuery(filter, undefined)), await teamCalls(client, teamCallsQuery(filter, [a.id])));
      assert.deepEqual(await teamTimeline(old, 'a1-session', a.id), sessionTimeline(a.j, 'a1-session', MAX_LIMIT));
      // The shipper of this schema ships on; the trigger fills the copies of what it inserts.
      a.j.sessions.event('a2-session', 'session_identified', { run_id: 'later', agent_release: null });
      await ship(old, a, 'laptop-a');
      assert.deepEqual(await teamTimeline(old, 'a2-session', a.id), sessionTimeline(a.j, 'a2-session', MAX_LIMIT));
    } finally {
      await old.end();
    }
  });
});

describe('the team queries\' plans on many shipped entries', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let client: pg.Client;
  let calls: number;

  before(async () => {
    db = await startPostgres();
    await db.admin('CREATE DATABASE plans');
    await db.admin(SHIP_SCHEMA, 'plans');
    calls = await fillShipped((sql) => db.admin(sql, 'plans'), 30_000, 3);
    client = await connectShip(db.url('admin', 'plans'));
  });
  after(async () => {
    await client?.end();
    await db?.stop();
  });

  it('the fill is what the plans are judged on: ~30,000 entries over 3 homes, the copies filled by the trigger', async () => {
    const r = (await client.query(`SELECT count(*)::int AS n, count(DISTINCT home_id)::int AS homes, count(*) FILTER (WHERE kind IS NULL)::int AS bare, count(*) FILTER (WHERE exposed IS NOT NULL)::int AS exposed FROM postern_entries`)).rows[0] as { n: number; homes: number; bare: number; exposed: number };
    assert.ok(r.n > 25_000, String(r.n));
    assert.deepEqual({ homes: r.homes, bare: r.bare }, { homes: 3, bare: 0 });
    assert.ok(r.exposed > 0);
  });

  for (const c of teamPlanCases(callsPerHome(30_000, 3))) {
    it(`${c.name}: ${c.indexes.map((i) => (typeof i === 'string' ? i : i.join(' or '))).join(', ')}, no Seq Scan of postern_entries`, async () => {
      assert.equal(calls, callsPerHome(30_000, 3));
      const p = await planOf(client, c);
      assert.equal(p.seqScans, 0, describePlan(p));
      assert.deepEqual(p.missing, [], describePlan(p));
    });
  }

  it('every index the schema makes for the team queries is one a plan above must use', () => {
    const named = new Set(teamPlanCases(calls).flatMap((c) => c.indexes.flat()));
    for (const i of TEAM_INDEXES) assert.ok(named.has(i), i);
  });

  it('a dropped index is seen: the plan falls back to another path and the check names the index', async () => {
    const c = teamPlanCases(calls).find((x) => x.name === 'activity --tool')!;
    await client.query('BEGIN');
    try {
      await client.query('DROP INDEX postern_calls_tool');
      assert.deepEqual((await planOf(client, c)).missing, ['postern_calls_tool']);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
