/**
 * An accepted gap (src/journal/ship/gaps.ts) against a real PostgreSQL: a
 * home ships, prunes entries it had not shipped yet (a signed prune
 * checkpoint), and shipping stops at SHIP_GAP; `--accept-gap` (shipPass with
 * the home's checkpoint key) records the gap, signed, and ships on; another
 * pass without it goes on too; `verify --from` passes and names the gap, with
 * its range and signer. A gap record the database's owner re-signed with
 * another key, or moved, does not count: the entries it covers are missing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { openAnchoredJournals } from '../../../src/journal/anchor/index.js';
import { CheckpointSigner } from '../../../src/journal/checkpoint/signature.js';
import { shipPass, type ShipOptions } from '../../../src/journal/ship/shipper.js';
import { SHIP_SCHEMA, shipGrants } from '../../../src/journal/ship/schema.js';
import { connectShip } from '../../../src/journal/ship/connect.js';
import { listHomes, openRemoteHome } from '../../../src/journal/ship/remote.js';
import { describeGap, verifyRemoteHome, type RemoteVerdict } from '../../../src/journal/ship/verify.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { postgresSkip, startPostgres, type RealPostgres } from '../../helpers/postgres.js';
import { anchoredHome, callRecord, httpTarget, type AnchoredHome } from './helpers.js';

function calls(j: Journals, n: number): void {
  for (let i = 0; i < n; i++) {
    const c = callRecord();
    j.activity.recordIntent({ ...c, target: httpTarget });
    j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { i } });
  }
}

describe('an accepted gap in a shipped journal', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let client: pg.Client;
  let h: AnchoredHome;

  const pass = async (opts: ShipOptions = {}): ReturnType<typeof shipPass> => {
    const j = openJournals(h.dir, { readonly: true });
    try {
      return await shipPass(client, { journals: j, checkpointsPath: h.cpPath, homeName: 'gappy' }, opts);
    } finally {
      j.close();
    }
  };
  const verdict = async (): Promise<RemoteVerdict> => {
    const r = await openRemoteHome(client, (await listHomes(client)).find((x) => x.name === 'gappy')!);
    try {
      return verifyRemoteHome(r);
    } finally {
      r.close();
    }
  };

  before(async () => {
    db = await startPostgres();
    await db.admin('CREATE ROLE shipper LOGIN');
    await db.admin('CREATE DATABASE team');
    await db.admin(SHIP_SCHEMA + shipGrants('shipper'), 'team');
    client = await connectShip(db.url('shipper', 'team'));
    h = anchoredHome('0'.repeat(64));
  });
  after(async () => {
    await client?.end();
    h?.cleanup();
    await db?.stop();
  });

  it('SHIP_GAP until accepted; accepted, it ships on, and verify --from names the gap, signed', async () => {
    let a = openAnchoredJournals(h.ctx());
    calls(a.journals, 3);
    a.close();
    const first = await pass();
    assert.deepEqual(first.remote, first.local);
    assert.equal((await verdict()).ok, true);

    // Entries written and pruned before they were shipped (the signed prune checkpoint names the bases).
    a = openAnchoredJournals(h.ctx());
    calls(a.journals, 4);
    h.clock.advance(1000);
    const plan = a.journals.prunePlan(h.clock.now().toISOString(), () => false);
    const signed = a.journals.pruneBases(plan);
    a.keeper.checkpointNow('prune', h.clock.now().toISOString(), signed);
    a.journals.prune(plan, signed);
    calls(a.journals, 2);
    a.close();

    await assert.rejects(pass(), (e: unknown) => isPosternError(e, 'SHIP_GAP') && /--accept-gap/.test(e.message) && /^activity entries 7 to \d+ were pruned/.test(e.message));
    const signer = new CheckpointSigner(h.seed);
    let accepted;
    try {
      accepted = await pass({ acceptGap: { signer, at: h.clock.now() } });
    } finally {
      signer.close();
    }
    assert.deepEqual(accepted.remote, accepted.local);
    const gap = accepted.accepted_gaps?.find((g) => g.journal === 'activity');
    assert.ok(gap !== undefined && gap.after === 6 && gap.base.seq === signed.activity.seq, JSON.stringify(accepted));
    // The gap is in the database now: a pass without --accept-gap (the daemon's) goes on.
    const a2 = openAnchoredJournals(h.ctx());
    calls(a2.journals, 1);
    a2.close();
    const later = await pass();
    assert.deepEqual(later.remote, later.local);
    assert.equal(later.accepted_gaps, undefined);

    const v = await verdict();
    assert.equal(v.ok, true, JSON.stringify(v));
    const reported = v.gaps.find((g) => g.journal === 'activity')!;
    assert.deepEqual({ from: reported.from, to: reported.to, problem: reported.problem }, { from: 7, to: signed.activity.seq, problem: null });
    assert.match(describeGap(reported), /^activity journal: entries 7 to \d+: ACCEPTED GAP: pruned on the home before they were shipped; accepted at .*, signed by SHA256:/);
    assert.ok(v.activity.ok && v.activity.entries === later.local.activity - signed.activity.seq + 6, JSON.stringify(v.activity));
  });

  it("a gap record re-signed by another key, or moved to another seq, does not count: its entries are missing", async () => {
    const homeId = (await listHomes(client)).find((x) => x.name === 'gappy')!.home_id;
    const stored = (await db.admin(`SELECT record, signature FROM postern_gaps WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team')).rows[0] as { record: string; signature: string };
    const other = new CheckpointSigner(randomBytes(32));
    try {
      const forged = JSON.stringify({ ...(JSON.parse(stored.record) as object), public_key: other.publicKey });
      await db.admin(`UPDATE postern_gaps SET record = '${forged}', signature = '${other.sign(JSON.parse(forged), 'ship_gap')}' WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team');
    } finally {
      other.close();
    }
    let v = await verdict();
    assert.equal(v.ok, false);
    assert.equal(v.gaps.find((g) => g.journal === 'activity')?.problem, 'unsigned');
    assert.deepEqual(v.activity.ok ? null : { seq: v.activity.first_bad_seq, reason: v.activity.reason }, { seq: 7, reason: 'missing_entry' });
    assert.match(describeGap(v.gaps.find((g) => g.journal === 'activity')!), /does not count: the record is not signed by this home's checkpoint key \(those entries are missing\)/);

    await db.admin(`UPDATE postern_gaps SET record = '${stored.record}', signature = '${stored.signature}', after_seq = 5 WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team');
    v = await verdict();
    assert.equal(v.gaps.find((g) => g.journal === 'activity')?.problem, 'misplaced');
    assert.equal(v.ok, false);
    await db.admin(`UPDATE postern_gaps SET after_seq = 6 WHERE home_id = '${homeId}' AND journal = 'activity'`, 'team');
    assert.equal((await verdict()).ok, true);
  });
});
