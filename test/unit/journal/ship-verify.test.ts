/**
 * `audit verify --from` against a real PostgreSQL (test/helpers/postgres.ts),
 * right both ways. Honest homes verify whatever state they shipped in: over
 * many pages of every paged read (a small page, several homes) and past the
 * default page of 5,000 entries, pruned before their first shipment. Each
 * way the database's owner was found to get past it is a finding that exits
 * 1: call bodies rewritten and re-chained with the checkpoints deleted (with
 * the home's record and receipts removed too), a checkpoint line edited, the
 * last one deleted, two swapped, the home rolled back to an older shipment,
 * the checkpoints re-signed with another key. The CLI always prints the key
 * it trusted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { openAnchoredJournals } from '../../../src/journal/anchor/index.js';
import { CheckpointSigner, keyFingerprint } from '../../../src/journal/checkpoint/signature.js';
import { entryHash } from '../../../src/journal/chain.js';
import { canonicalJson } from '../../../src/journal/json.js';
import { appendCheckpoint, readCheckpoints } from '../../../src/journal/checkpoint/file.js';
import { shipPass, type ShipProgress } from '../../../src/journal/ship/shipper.js';
import { SHIP_SCHEMA, shipGrants } from '../../../src/journal/ship/schema.js';
import { connectShip } from '../../../src/journal/ship/connect.js';
import { listHomes, openRemoteHome } from '../../../src/journal/ship/remote.js';
import { verifyRemoteHome, type RemoteVerdict } from '../../../src/journal/ship/verify.js';
import { postgresSkip, startPostgres, type RealPostgres } from '../../helpers/postgres.js';
import { cliSandbox, type CliResult, type CliSandbox } from '../../helpers/cli.js';
import { anchoredHome, callRecord, httpTarget, type AnchoredHome } from './helpers.js';

/** `n` calls, each an intent and its outcome; keyed ones leave idempotency claims (a prune keeps those of removed entries). */
function calls(j: Journals, n: number, keyed: boolean): void {
  for (let i = 0; i < n; i++) {
    const c = callRecord(keyed ? { idempotency_key: `k-${randomBytes(6).toString('hex')}` } : {});
    j.activity.recordIntent({ ...c, target: httpTarget });
    j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 1, result: { i } });
  }
}

/** `n` unkeyed calls committed 200 to a transaction (a journal commit is durable: one at a time, thousands take minutes). */
function manyCalls(j: Journals, n: number): void {
  for (let done = 0; done < n; done += 200) {
    const batch = Array.from({ length: Math.min(200, n - done) }, () => callRecord());
    j.activity.recordIntents(batch.map((c) => ({ ...c, target: httpTarget })));
    j.activity.recordOutcomes(batch.map((c, i) => ({ call_id: c.call_id, outcome: { status: 'success', side_effect_started: true, duration_ms: 1, result: { i: done + i } } })));
  }
}

/** A home whose daemon ran `cycles` times (a signed checkpoint at each start and stop), with `n` calls a run. */
function runs(h: AnchoredHome, cycles: number, n: number, write: (j: Journals, n: number) => void = (j, k) => calls(j, k, true)): void {
  for (let c = 0; c < cycles; c++) {
    const a = openAnchoredJournals(h.ctx());
    try {
      write(a.journals, n);
    } finally {
      h.clock.advance(1000);
      a.close();
    }
  }
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe('verify --from: every tamper found, every honest home ok', { skip: postgresSkip() }, () => {
  let db: RealPostgres;
  let client: pg.Client;
  let sb: CliSandbox;
  let url: string;
  const homes = new Map<string, AnchoredHome>();

  const home = (name: string): AnchoredHome => {
    const h = anchoredHome('0'.repeat(64));
    homes.set(name, h);
    return h;
  };
  const ship = async (name: string): Promise<ShipProgress> => {
    const h = homes.get(name)!;
    const j = openJournals(h.dir, { readonly: true });
    try {
      const p = await shipPass(client, { journals: j, checkpointsPath: h.cpPath, homeName: name });
      assert.deepEqual(p.remote, p.local, `${name}: shipped whole`);
      return p;
    } finally {
      j.close();
    }
  };
  const idOf = async (name: string): Promise<string> => (await listHomes(client)).find((x) => x.name === name)!.home_id;
  const verdict = async (name: string, o: { key?: string; page?: number } = {}): Promise<RemoteVerdict> => {
    const r = await openRemoteHome(client, (await listHomes(client)).find((x) => x.name === name)!, o.page === undefined ? {} : { page: o.page });
    try {
      return verifyRemoteHome(r, o.key);
    } finally {
      r.close();
    }
  };
  const cli = (name: string, ...more: string[]): Promise<CliResult> => sb.run(['audit', 'verify', '--from', url, '--home', name, ...more]);
  const sql = async (text: string, values: unknown[] = []): Promise<pg.QueryResult> => {
    const c = await connectShip(db.url('admin', 'team'));
    try {
      return await c.query(text, values);
    } finally {
      await c.end();
    }
  };
  const keyOf = (name: string): string => {
    const s = new CheckpointSigner(homes.get(name)!.seed);
    try {
      return s.publicKey;
    } finally {
      s.close();
    }
  };
  /** An honest verdict: nothing found, every line trusted, the key the home's own. */
  const assertHonest = (v: RemoteVerdict, name: string): void => {
    assert.equal(v.ok, true, JSON.stringify({ ...v, checkpoint: v.checkpoint.line }));
    assert.deepEqual(v.findings, []);
    assert.equal(v.trust.key, keyOf(name));
    assert.equal(v.checkpoint.inspection.walk.accepted.length, readCheckpoints(homes.get(name)!.cpPath).length, 'every shipped line trusted');
  };
  /**
   * What the owner of the database does to rewrite history: a new body for an activity entry, and every
   * later row of the journal re-chained so the chain walk alone finds nothing.
   */
  const rewrite = async (id: string, seq: number): Promise<void> => {
    const rows = (await sql("SELECT seq::int AS seq, row FROM postern_entries WHERE home_id = $1 AND journal = 'activity' AND seq >= $2 ORDER BY seq", [id, seq - 1])).rows as { seq: number; row: string }[];
    let prev = (JSON.parse(rows[0]!.row) as { hash: string }).hash;
    for (const r of rows.slice(1)) {
      const o = JSON.parse(r.row) as Record<string, string | number | null>;
      if (r.seq === seq) {
        const body = String(o['body']);
        o['body'] = body.replace(/"result":\{"i":\d+\}/, '"result":{"i":"rewritten"}');
        assert.notEqual(o['body'], body, `seq ${seq} is an outcome`);
      }
      const { prev_hash: _p, hash: _h, ...content } = o;
      const hash = entryHash(prev, content);
      await sql('UPDATE postern_entries SET row = $3 WHERE home_id = $1 AND journal = \'activity\' AND seq = $2', [id, r.seq, canonicalJson({ ...content, prev_hash: prev, hash })]);
      prev = hash;
    }
  };

  before(async () => {
    db = await startPostgres();
    await db.admin('CREATE ROLE shipper LOGIN');
    await db.admin('CREATE DATABASE team');
    await db.admin(SHIP_SCHEMA + shipGrants('shipper'), 'team');
    url = db.url('shipper', 'team');
    client = await connectShip(url);
    sb = await cliSandbox();
  });
  after(async () => {
    await client?.end();
    for (const h of homes.values()) h.cleanup();
    await sb?.cleanup();
    await db?.stop();
  });

  it('several homes read over many small pages: every entry, every checkpoint line in file order, each home ok', async () => {
    for (const name of ['paged-1', 'paged-2', 'paged-3']) {
      runs(home(name), 6, 4);
      await ship(name);
    }
    for (const name of ['paged-1', 'paged-2', 'paged-3']) {
      const local = openJournals(homes.get(name)!.dir, { readonly: true });
      const heads = local.facts();
      local.close();
      assert.ok(readCheckpoints(homes.get(name)!.cpPath).length > 10, 'positions past 9: text order would put 10 before 2');
      for (const page of [1, 3, 7, undefined]) {
        const v = await verdict(name, page === undefined ? {} : { page });
        assertHonest(v, name);
        assert.ok(v.activity.ok && v.activity.entries === heads.activity.head.seq && v.sessions.ok && v.sessions.entries === heads.sessions.head.seq, `page ${page}: ${JSON.stringify(v.activity)}`);
      }
    }
  });

  it('a home of more than 5,000 entries verifies at the default page size (text order missed entries)', async () => {
    runs(home('big'), 1, 2_600, manyCalls);
    const p = await ship('big');
    assert.ok(p.local.activity > 5_000);
    const v = await verdict('big');
    assertHonest(v, 'big');
    assert.ok(v.activity.ok && v.activity.entries === p.local.activity, JSON.stringify(v.activity));
    const out = await cli('big', '--json');
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const j = JSON.parse(out.stdout) as { ok: boolean; homes: { trusted_key: string; key_pinned: boolean; findings: string[] }[] };
    assert.deepEqual({ ok: j.ok, key: j.homes[0]!.trusted_key, pinned: j.homes[0]!.key_pinned, findings: j.homes[0]!.findings }, { ok: true, key: keyFingerprint(keyOf('big')), pinned: false, findings: [] });
  });

  it('a home pruned before its first shipment verifies, its kept claims judged by the signed base', async () => {
    const h = home('pruned-first');
    runs(h, 2, 5);
    const a = openAnchoredJournals(h.ctx());
    h.clock.advance(1000);
    const plan = a.journals.prunePlan(h.clock.now().toISOString(), () => false);
    const signed = a.journals.pruneBases(plan);
    assert.notEqual(signed.activity.claims_digest, null, 'the prune keeps claims of removed entries');
    a.keeper.checkpointNow('prune', h.clock.now().toISOString(), signed);
    a.journals.prune(plan, signed);
    calls(a.journals, 3, true);
    a.close();
    await ship('pruned-first');
    assertHonest(await verdict('pruned-first'), 'pruned-first');
    const out = await cli('pruned-first');
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /^ {2}checkpoint: ok: journal matches checkpoint #\d+/m);
    // The digest is still held to the signature: another one in the shipped base is a mismatch.
    const id = await idOf('pruned-first');
    await sql("UPDATE postern_bases SET base = replace(base, $2, $3) WHERE home_id = $1 AND journal = 'activity'", [id, signed.activity.claims_digest, 'f'.repeat(64)]);
    const forged = await verdict('pruned-first');
    assert.equal(forged.ok, false);
    assert.match(forged.checkpoint.line, /base|prune/);
  });

  it('a gap accepted at the end of the chain, a passphrase change (a key change), a role granted before receipts: each ok', async () => {
    // Shipped, then written and pruned whole before it was shipped again: the gap ends the chain.
    const g = home('gap-at-end');
    runs(g, 1, 3);
    await ship('gap-at-end');
    runs(g, 1, 3);
    const a = openAnchoredJournals(g.ctx());
    g.clock.advance(1000);
    const plan = a.journals.prunePlan(g.clock.now().toISOString(), () => false);
    const signed = a.journals.pruneBases(plan);
    a.keeper.checkpointNow('prune', g.clock.now().toISOString(), signed);
    a.journals.prune(plan, signed);
    a.close();
    const signer = new CheckpointSigner(g.seed);
    const j = openJournals(g.dir, { readonly: true });
    try {
      const p = await shipPass(client, { journals: j, checkpointsPath: g.cpPath, homeName: 'gap-at-end' }, { acceptGap: { signer, at: g.clock.now() } });
      assert.ok(p.accepted_gaps !== undefined && p.accepted_gaps.length > 0, JSON.stringify(p));
    } finally {
      j.close();
      signer.close();
    }
    assertHonest(await verdict('gap-at-end'), 'gap-at-end');

    // A key change: the old key signs a line naming the new one, and the new one signs from then on.
    const k = home('key-changed');
    runs(k, 2, 2);
    const lines = readCheckpoints(k.cpPath);
    const lastLine = lines.at(-1)!;
    assert.notEqual(lastLine, 'malformed');
    const newSeed = randomBytes(32);
    const [oldSigner, newSigner] = [new CheckpointSigner(k.seed), new CheckpointSigner(newSeed)];
    try {
      if (lastLine === 'malformed') return;
      const record = { ...lastLine.record, reason: 'key_change' as const, pruned_before: null, next_public_key: newSigner.publicKey };
      appendCheckpoint(k.cpPath, { record, signature: oldSigner.sign(record) });
      for (let c = 0; c < 2; c++) {
        const o = openAnchoredJournals(k.ctx({ checkpoints: { path: k.cpPath, seed: newSeed } }));
        calls(o.journals, 2, true);
        k.clock.advance(1000);
        o.close();
      }
      await ship('key-changed');
      for (const key of [undefined, keyFingerprint(newSigner.publicKey), keyFingerprint(oldSigner.publicKey)]) {
        const v = await verdict('key-changed', key === undefined ? {} : { key });
        assert.equal(v.ok, true, `${key}: ${v.checkpoint.line} ${v.findings.join(' / ')}`);
        assert.deepEqual(v.trust.keys, [oldSigner.publicKey, newSigner.publicKey]);
      }
    } finally {
      oldSigner.close();
      newSigner.close();
    }

    // A role granted before receipts existed ships on (no receipt), and its home verifies.
    await db.admin('CREATE ROLE oldship LOGIN', 'team');
    await db.admin('GRANT USAGE ON SCHEMA public TO oldship; GRANT SELECT, INSERT ON postern_homes, postern_bases, postern_entries, postern_checkpoints, postern_gaps TO oldship;', 'team');
    const o = home('old-grant');
    runs(o, 2, 2);
    const old = await connectShip(db.url('oldship', 'team'));
    const oj = openJournals(o.dir, { readonly: true });
    try {
      const p = await shipPass(old, { journals: oj, checkpointsPath: o.cpPath, homeName: 'old-grant' });
      assert.deepEqual(p.remote, p.local);
    } finally {
      oj.close();
      await old.end();
    }
    assert.equal(((await sql('SELECT count(*)::int AS n FROM postern_receipts WHERE home_id = $1', [await idOf('old-grant')])).rows[0] as { n: number }).n, 0);
    assertHonest(await verdict('old-grant'), 'old-grant');
  });

  it('bodies rewritten and re-chained, the checkpoints deleted: found without --key, the key printed', async () => {
    runs(home('rewritten'), 2, 3);
    await ship('rewritten');
    const id = await idOf('rewritten');
    await rewrite(id, 4);
    assert.equal((await verdict('rewritten')).ok, false, 'the checkpoint\'s head catches the re-chained rows');
    await sql('DELETE FROM postern_checkpoints WHERE home_id = $1', [id]);
    let v = await verdict('rewritten');
    assert.ok(v.activity.ok, 'the chain alone is whole again');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => f.includes(keyFingerprint(keyOf('rewritten'))) && /holds none: they were removed/.test(f)), v.findings.join('\n'));
    let out = await cli('rewritten');
    assert.equal(out.code, 1, out.stdout);
    assert.match(out.stdout, /^home rewritten \(\w+\): FINDINGS$/m);
    assert.doesNotMatch(out.stdout, /no signed checkpoint yet/);
    assert.match(out.stdout, /^ {2}signed by: no key \(no checkpoint line verifies\)$/m);
    // The owner removes what says there were checkpoints, too: entries nothing signed vouches for are still a finding.
    await sql('UPDATE postern_homes SET public_key = NULL WHERE home_id = $1', [id]);
    await sql('DELETE FROM postern_receipts WHERE home_id = $1', [id]);
    v = await verdict('rewritten');
    assert.equal(v.ok, false);
    assert.match(v.checkpoint.line, /^no signed checkpoint, but the database holds \d+ entries of this home: its checkpoints were removed/);
    out = await cli('rewritten');
    assert.equal(out.code, 1, out.stdout);
  });

  it('a checkpoint line edited: a finding, not a note', async () => {
    runs(home('edited-cp'), 3, 2);
    await ship('edited-cp');
    const id = await idOf('edited-cp');
    await sql("UPDATE postern_checkpoints SET line = replace(line, '\"reason\":\"start\"', '\"reason\":\"operator\"') WHERE home_id = $1 AND position = 2", [id]);
    const v = await verdict('edited-cp');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => /^checkpoints: line 3 does not verify against its signature/.test(f)), v.findings.join('\n'));
    const out = await cli('edited-cp');
    assert.equal(out.code, 1, out.stdout);
    assert.match(out.stdout, /^ {2}checkpoints: line 3 does not verify/m);
    assert.match(out.stdout, new RegExp(`^ {2}signed by ${escaped(keyFingerprint(keyOf('edited-cp')))} \\(not pinned: the first shipped checkpoint's key; the home's record names the same\\): compare with \`postern audit key\``, 'm'));
    // Not a checkpoint at all.
    await sql("UPDATE postern_checkpoints SET line = '{\"edited\":true}' WHERE home_id = $1 AND position = 1", [id]);
    assert.ok((await verdict('edited-cp')).findings.some((f) => /^checkpoints: line 2 is not a checkpoint/.test(f)));
  });

  it('the last checkpoint deleted, or two swapped: the receipts say otherwise', async () => {
    for (const name of ['last-cp', 'swapped-cp']) {
      runs(home(name), 3, 2);
      await ship(name);
    }
    const last = await idOf('last-cp');
    await sql('DELETE FROM postern_checkpoints WHERE home_id = $1 AND position = (SELECT max(position) FROM postern_checkpoints WHERE home_id = $1)', [last]);
    let v = await verdict('last-cp');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => /^checkpoints: the database holds \d+ checkpoint lines, but a shipment recorded \d+: checkpoints were removed$/.test(f)), v.findings.join('\n'));
    assert.equal((await cli('last-cp')).code, 1);

    const swapped = await idOf('swapped-cp');
    await sql('UPDATE postern_checkpoints c SET line = o.line FROM postern_checkpoints o WHERE c.home_id = $1 AND o.home_id = $1 AND ((c.position = 1 AND o.position = 3) OR (c.position = 3 AND o.position = 1))', [swapped]);
    v = await verdict('swapped-cp');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => /^checkpoints: the first \d+ checkpoint lines are not the ones a shipment recorded/.test(f)), v.findings.join('\n'));
    assert.equal((await cli('swapped-cp')).code, 1);
  });

  it('a home rolled back to an older shipped state: the receipts say it held more', async () => {
    const h = home('rolled-back');
    runs(h, 2, 2);
    const first = await ship('rolled-back');
    const cps = readCheckpoints(h.cpPath).length;
    runs(h, 2, 2);
    await ship('rolled-back');
    assertHonest(await verdict('rolled-back'), 'rolled-back');
    const id = await idOf('rolled-back');
    for (const name of ['activity', 'sessions'] as const) await sql('DELETE FROM postern_entries WHERE home_id = $1 AND journal = $2 AND seq > $3', [id, name, first.remote[name]]);
    await sql('DELETE FROM postern_checkpoints WHERE home_id = $1 AND position >= $2', [id, cps]);
    const v = await verdict('rolled-back');
    assert.ok(v.activity.ok && v.sessions.ok && v.checkpoint.ok, 'the older state is whole in itself');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => /^activity journal: the database holds entries up to seq \d+, but a shipment recorded seq \d+: entries were removed from the end$/.test(f)), v.findings.join('\n'));
    assert.ok(v.findings.some((f) => /checkpoints were removed$/.test(f)), v.findings.join('\n'));
    assert.equal((await cli('rolled-back')).code, 1);
  });

  it('checkpoints re-signed with another key: the home\'s record does not lead to it; --key pins the real one', async () => {
    runs(home('resigned'), 2, 2);
    await ship('resigned');
    const id = await idOf('resigned');
    const other = new CheckpointSigner(randomBytes(32));
    try {
      const lines = (await sql('SELECT position::int AS position, line FROM postern_checkpoints WHERE home_id = $1', [id])).rows as { position: number; line: string }[];
      for (const l of lines) {
        const { record } = JSON.parse(l.line) as { record: Record<string, unknown> };
        const forged = { ...record, public_key: other.publicKey };
        await sql('UPDATE postern_checkpoints SET line = $3 WHERE home_id = $1 AND position = $2', [id, l.position, canonicalJson({ record: forged, signature: other.sign(forged) })]);
      }
    } finally {
      other.close();
    }
    const v = await verdict('resigned');
    assert.equal(v.ok, false);
    assert.ok(v.findings.some((f) => /the home's record names the key SHA256:\S+, which the checkpoints trusted here \(SHA256:\S+\) do not lead to/.test(f)), v.findings.join('\n'));
    const out = await cli('resigned');
    assert.equal(out.code, 1);
    assert.match(out.stdout, /NOT the key the home's record names/);
    const pinned = await verdict('resigned', { key: keyFingerprint(keyOf('resigned')) });
    assert.equal(pinned.ok, false);
  });
});
