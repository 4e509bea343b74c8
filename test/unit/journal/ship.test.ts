/**
 * The shipper (src/journal/ship/shipper.ts) against a real PostgreSQL
 * (test/helpers/postgres.ts): two homes shipping at once, and two shippers
 * of one home at once (the daemon and `audit ship`), leave every entry once;
 * a row the database holds that differs from the local one is SHIP_CONFLICT
 * and stays as it was; a chain pruned before it was shipped is SHIP_GAP; the
 * copy read back (remote.ts) verifies like the local journal. The connection
 * string's password never reaches an error message.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { shipPass } from '../../../src/journal/ship/shipper.js';
import { SHIP_SCHEMA, shipGrants, ENTRIES_INSERT } from '../../../src/journal/ship/schema.js';
import { connectShip, describeTarget } from '../../../src/journal/ship/connect.js';
import { listHomes, openRemoteHome } from '../../../src/journal/ship/remote.js';
import { verifyRemoteHome } from '../../../src/journal/ship/verify.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { postgresSkip, startPostgres, type RealPostgres } from '../../helpers/postgres.js';
import { callRecord, httpTarget, tempJournalDir } from './helpers.js';

function home(events: number): { j: Journals; cleanup: () => void } {
  const t = tempJournalDir();
  const j = openJournals(t.dir);
  for (let i = 0; i < events; i++) {
    const c = callRecord();
    j.activity.recordIntent({ ...c, target: httpTarget });
    j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { i } });
    j.sessions.event(null, 'lock', { by: `test-${i}` });
  }
  return {
    j,
    cleanup: () => {
      j.close();
      t.cleanup();
    },
  };
}

describe('shipping to a real PostgreSQL', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let url: string;
  const src = (j: Journals, homeName: string): { journals: Journals; checkpointsPath: string; homeName: string } => ({ journals: j, checkpointsPath: '/nonexistent/checkpoints.jsonl', homeName });
  const count = async (homeId: string): Promise<{ n: number; d: number; hi: number }> =>
    (await db.admin(`SELECT count(*)::int AS n, count(DISTINCT (journal, seq))::int AS d, max(seq)::int AS hi FROM postern_entries WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team')).rows[0] as { n: number; d: number; hi: number };

  before(async () => {
    db = await startPostgres();
    await db.admin('CREATE ROLE shipper LOGIN');
    await db.admin('CREATE DATABASE team');
    await db.admin(SHIP_SCHEMA + shipGrants('shipper'), 'team');
    url = db.url('shipper', 'team');
  });
  after(() => db.stop());

  it('two homes at once, and two shippers of one home at once: every entry once, in order', async () => {
    const a = home(120);
    const b = home(80);
    const clients = await Promise.all([connectShip(url), connectShip(url), connectShip(url)]);
    try {
      const [pa, pb, pa2] = await Promise.all([
        shipPass(clients[0], src(a.j, 'a'), { batch: 7 }),
        shipPass(clients[1], src(b.j, 'b'), { batch: 5 }),
        shipPass(clients[2], src(a.j, 'a'), { batch: 11 }).catch((e: unknown) => e),
      ]);
      // The second shipper of home a either caught up too, or met rows the first had just inserted: identical, so no conflict.
      assert.ok(!isPosternError(pa2), String(pa2));
      assert.deepEqual(pa.remote, pa.local);
      assert.deepEqual(pb.remote, pb.local);
      assert.deepEqual(await count(pa.home_id), { n: 240, d: 240, hi: 240 });
      assert.deepEqual(await count(pb.home_id), { n: 160, d: 160, hi: 160 });
      const again = await shipPass(clients[0], src(a.j, 'a'));
      assert.deepEqual(again.shipped, { activity: 0, sessions: 0, checkpoints: 0 });
      // Read back, the copy verifies like the local journal.
      const homes = await listHomes(clients[0]);
      assert.deepEqual(homes.map((h) => h.name).sort(), ['a', 'b']);
      for (const h of homes) {
        const r = await openRemoteHome(clients[0], h);
        try {
          const v = verifyRemoteHome(r);
          assert.equal(v.sessions.ok && v.activity.ok && v.rows.length === 0, true, JSON.stringify(v));
        } finally {
          r.close();
        }
      }
    } finally {
      for (const c of clients) await c.end();
      a.cleanup();
      b.cleanup();
    }
  });

  it('a different row already in the database is SHIP_CONFLICT and is left as it was', async () => {
    const a = home(3);
    const client = await connectShip(url);
    try {
      const homeId = a.j.facts().activity.journal_id!;
      // Someone (another home claiming this id, or the database's owner) put a row at seq 2 first.
      const planted = '{"planted":true}';
      let plantedOnce = false;
      const racing = Object.create(client) as pg.Client;
      racing.query = (async (sql: string, params?: unknown[]) => {
        if (sql === ENTRIES_INSERT && !plantedOnce) {
          plantedOnce = true;
          await db.admin(`INSERT INTO postern_entries (home_id, journal, seq, at, hash, row) VALUES ('${homeId}', 'activity', 2, 'x', 'x', '${planted}')`, 'team');
        }
        return client.query(sql, params);
      }) as typeof client.query;
      await assert.rejects(shipPass(racing, src(a.j, 'conflict')), (e: unknown) => isPosternError(e, 'SHIP_CONFLICT') && /activity entry at seq 2/.test(e.message));
      const kept = await db.admin(`SELECT row FROM postern_entries WHERE home_id = '${homeId}' AND journal = 'activity' AND seq = 2`, 'team');
      assert.equal((kept.rows[0] as { row: string }).row, planted);
    } finally {
      await client.end();
      a.cleanup();
    }
  });

  it('a chain pruned before its first shipment starts at its base; entries pruned before they were shipped are SHIP_GAP', async () => {
    const a = home(6);
    const b = home(2);
    const client = await connectShip(url);
    try {
      a.j.prune(a.j.prunePlan('2999-01-01T00:00:00.000Z', () => false));
      const first = await shipPass(client, src(a.j, 'pruned-first'));
      assert.equal(first.remote.activity, first.local.activity);
      const ra = await openRemoteHome(client, (await listHomes(client)).find((h) => h.name === 'pruned-first')!);
      try {
        const v = verifyRemoteHome(ra);
        assert.equal(v.activity.ok && v.sessions.ok, true, JSON.stringify(v));
      } finally {
        ra.close();
      }

      await shipPass(client, src(b.j, 'pruned-late'));
      for (let i = 0; i < 4; i++) {
        const c = callRecord();
        b.j.activity.recordIntent({ ...c, target: httpTarget });
        b.j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: null });
      }
      b.j.prune(b.j.prunePlan('2999-01-01T00:00:00.000Z', () => false));
      await assert.rejects(shipPass(client, src(b.j, 'pruned-late')), (e: unknown) => isPosternError(e, 'SHIP_GAP') && /^activity entries 5 to \d+ were pruned before they were shipped/.test(e.message));
    } finally {
      await client.end();
      a.cleanup();
      b.cleanup();
    }
  });

  it('a refused connection names the database, never the password', async () => {
    const secretUrl = `postgresql://nobody:CANARYpw-hunter2@/team?host=${encodeURIComponent(db.socketDir)}`;
    await assert.rejects(connectShip(secretUrl), (e: unknown) => isPosternError(e, 'SHIP_UNAVAILABLE') && !e.message.includes('hunter2') && e.message.includes(db.socketDir));
    assert.equal(describeTarget('postgres://u:pw@db.example:5432/audit'), 'db.example:5432/audit');
  });
});
