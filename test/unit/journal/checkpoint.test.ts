// @subject time: checkpoint times and their order (run again a year ahead by .ci/run)
/**
 * Signed checkpoints, bundles and prune on a generated journal (issue 14):
 * tampering at several places detected against the last checkpoint (an
 * edited row re-chained, a deleted row, the end cut off, a whole file
 * replaced by a consistent shorter copy or by another journal, old rows
 * removed with a forged base); periodic checkpoints on the injected clock; a
 * bundle verified offline from a directory holding nothing but the bundle,
 * refused after any one changed byte; prune keeping verification and what
 * idempotency retention needs. The clock is a ManualClock: no date dependence.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals, entryHash, type Journals } from '../../../src/journal/index.js';
import { openAnchoredJournals } from '../../../src/journal/anchor/index.js';
import { CONTENT_COLUMNS } from '../../../src/journal/activity-schema.js';
import { readCheckpoints, appendCheckpoint } from '../../../src/journal/checkpoint/file.js';
import { inspectCheckpoints } from '../../../src/journal/checkpoint/inspect.js';
import { lastCheckpoint, walkTrust, type CheckpointRecord } from '../../../src/journal/checkpoint/record.js';
import { CheckpointSigner, keyFingerprint } from '../../../src/journal/checkpoint/signature.js';
import { buildBundle } from '../../../src/journal/bundle/build.js';
import { bundleBytes } from '../../../src/journal/bundle/format.js';
import { verifyBundle } from '../../../src/journal/bundle/verify.js';
import { replayWindowOpen } from '../../../src/daemon/pipeline/stages/key/idempotency.js';
import { isPosternError } from '../../../src/rules/errors.js';
import type { ManualClock } from '../../helpers/clock.js';
import { anchoredHome, callRecord, httpTarget, type AnchoredHome } from './helpers.js';

const DAY = 86_400_000;
const CATALOG_TEXT = 'tools: {}\n';
const CATALOG = createHash('sha256').update(CATALOG_TEXT).digest('hex');
let keys = 0;

type Home = AnchoredHome;
const home = (): Home => anchoredHome(CATALOG);

/** `n` calls, one a simulated minute apart: a keyed intent and its outcome each (every third one rejected instead). */
function generate(j: Journals, clock: ManualClock, n: number, tool = 'deploy_preview'): string[] {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    clock.advance(60_000);
    const c = callRecord({ tool, idempotency_key: `k-${tool}-${keys++}`, args_digest: `d-${i}`, handler_revision: `postern/0.1.0+catalog.${CATALOG.slice(0, 16)}` });
    ids.push(c.call_id);
    if (i % 3 === 2) {
      j.activity.recordRejected({ ...c, idempotency_key: null, error_code: 'VALIDATION_FAILED', message: 'bad' });
      continue;
    }
    j.activity.recordIntent({ ...c, target: httpTarget });
    j.activity.recordOutcome(c.call_id, { status: 'success', side_effect_started: true, duration_ms: 3, result: { n: i } });
  }
  return ids;
}

/** Rewrites the activity entries with `edit`, then re-chains every hash after it (what a careful forger does). */
function rewriteAndRechain(dir: string, edit: (db: Database.Database) => void): void {
  const db = new Database(join(dir, 'activity.db'));
  db.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
  edit(db);
  const rows = db.prepare('SELECT * FROM entries ORDER BY seq').all() as Record<string, string | number | null>[];
  let prev = '0'.repeat(64);
  const upd = db.prepare('UPDATE entries SET seq = ?, prev_hash = ?, hash = ? WHERE seq = ?');
  // Renumber from 1 (after a deletion) and re-hash.
  rows.forEach((r, i) => {
    const content: Record<string, string | number | null> = {};
    for (const c of CONTENT_COLUMNS) content[c] = r[c] ?? null;
    content['seq'] = i + 1;
    const hash = entryHash(prev, content);
    upd.run(i + 1, prev, hash, r['seq']);
    prev = hash;
  });
  db.close();
}

function judged(h: Home, root?: string) {
  return inspectCheckpoints(h.dir, h.cpPath, root === undefined ? {} : { root });
}

describe('signed checkpoints', () => {
  it('are written at start and clean stop, and the journal matches the last one', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 5);
    a.close();
    const lines = readCheckpoints(h.cpPath);
    const reasons = lines.map((l) => (l === 'malformed' ? l : l.record.reason));
    assert.deepEqual(reasons, ['start', 'shutdown']);
    const i = judged(h);
    assert.equal(i.kind, 'judged');
    assert.equal(i.kind === 'judged' && i.verdict.kind, 'ok');
    assert.equal(i.kind === 'judged' && i.pinned, false);
    h.cleanup();
  });

  it('are written periodically: after N entries, and after the interval on the monotonic clock', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    // The keeper's defaults: 1000 entries or 10 minutes. generate() advances a minute per call.
    generate(a.journals, h.clock, 12);
    a.close();
    const reasons = readCheckpoints(h.cpPath).map((l) => (l === 'malformed' ? l : l.record.reason));
    assert.ok(reasons.includes('periodic'), `a periodic checkpoint after 10 simulated minutes: ${reasons.join(',')}`);
    h.cleanup();
  });

  it('a catalog adoption writes one', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    a.keeper.noteCatalog('d'.repeat(64));
    a.keeper.flush();
    a.close();
    const cps = readCheckpoints(h.cpPath).filter((l) => l !== 'malformed');
    assert.ok(cps.some((c) => typeof c !== 'string' && c.record.reason === 'catalog' && c.record.catalog_digest === 'd'.repeat(64)));
    h.cleanup();
  });

  it('detect a whole activity file replaced by a consistent shorter copy (head behind)', () => {
    const h = home();
    let a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 4);
    a.close();
    mkdirSync(join(h.root, 'copy'));
    for (const f of ['activity.db', 'sessions.db']) copyFileSync(join(h.dir, f), join(h.root, 'copy', f));
    a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 4);
    a.close();
    for (const f of ['activity.db', 'sessions.db']) copyFileSync(join(h.root, 'copy', f), join(h.dir, f));
    rmSync(join(h.dir, 'activity.db-wal'), { force: true });
    rmSync(join(h.dir, 'sessions.db-wal'), { force: true });
    // The copy verifies as a chain on its own; only the checkpoint tells it is older.
    const j = openJournals(h.dir, { readonly: true });
    assert.equal(j.activity.verify().ok, true);
    j.close();
    const i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'mismatch' && i.verdict.problem.kind === 'rolled_back', JSON.stringify(i.kind === 'judged' ? i.verdict : i.kind));
    h.cleanup();
  });

  it('detect an edited row that was re-chained (another hash at the checkpointed seq)', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 6);
    a.close();
    rewriteAndRechain(h.dir, (db) => assert.equal(db.prepare(`UPDATE entries SET body = replace(body, 'main', 'evil') WHERE seq = 1 AND body LIKE '%main%'`).run().changes, 1));
    const j = openJournals(h.dir, { readonly: true });
    assert.equal(j.activity.verify().ok, true, 'a re-chained journal passes the keyless chain check');
    j.close();
    const i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'mismatch' && i.verdict.problem.kind === 'rewritten', JSON.stringify(i.kind === 'judged' ? i.verdict : i.kind));
    h.cleanup();
  });

  it('detect a deleted row, re-chained (the journal ends before the checkpoint)', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 6);
    a.close();
    rewriteAndRechain(h.dir, (db) => db.prepare('DELETE FROM entries WHERE seq = 3').run());
    const i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'mismatch' && i.verdict.problem.kind === 'rolled_back');
    h.cleanup();
  });

  it('detect the journal replaced by another journal (id mismatch), and rows removed from the start with a forged base', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 6);
    a.close();
    const db = new Database(join(h.dir, 'activity.db'));
    const row = db.prepare('SELECT seq, hash FROM entries WHERE seq = 3').get() as { seq: number; hash: string };
    db.exec('DROP TRIGGER entries_no_delete');
    db.prepare('DELETE FROM entries WHERE seq <= 3').run();
    db.prepare(`INSERT INTO meta (key, value) VALUES ('chain_base', ?)`).run(JSON.stringify({ seq: row.seq, hash: row.hash, claims_digest: null }));
    db.close();
    let i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'mismatch' && i.verdict.problem.kind === 'base_mismatch', JSON.stringify(i.kind === 'judged' ? i.verdict : i.kind));
    const other = new Database(join(h.dir, 'sessions.db'));
    other.prepare(`UPDATE meta SET value = 'another-journal' WHERE key = 'journal_id'`).run();
    other.close();
    i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'mismatch' && i.verdict.problem.kind === 'replaced');
    h.cleanup();
  });

  it('trust: a named key that signed nothing is refused; a forged line is ignored; a key change is followed', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    a.close();
    const lines = readCheckpoints(h.cpPath);
    const first = lines[0];
    assert.ok(first !== undefined && first !== 'malformed');
    const fp = keyFingerprint(first.record.public_key);
    assert.equal(judged(h, fp).kind, 'judged');
    assert.equal(judged(h, keyFingerprint('ab'.repeat(32))).kind, 'root_unseen');
    // Forged: a record changed after signing.
    appendCheckpoint(h.cpPath, { record: { ...first.record, counter: 999 }, signature: first.signature });
    assert.equal(walkTrust(readCheckpoints(h.cpPath)).badSignature, 1);
    // A key change signed by the old key, then a checkpoint under the new key: trusted from the old fingerprint.
    const oldSigner = new CheckpointSigner(h.seed);
    const next = new CheckpointSigner(randomBytes(32));
    const base = lastCheckpoint(walkTrust(readCheckpoints(h.cpPath)).accepted)!.record;
    const change: CheckpointRecord = { ...base, reason: 'key_change', next_public_key: next.publicKey };
    appendCheckpoint(h.cpPath, { record: change, signature: oldSigner.sign(change) });
    const later: CheckpointRecord = { ...base, counter: base.counter + 1, reason: 'start', public_key: next.publicKey, next_public_key: null };
    appendCheckpoint(h.cpPath, { record: later, signature: next.sign(later) });
    const w = walkTrust(readCheckpoints(h.cpPath), fp);
    assert.deepEqual(w.keys, [oldSigner.publicKey, next.publicKey]);
    assert.equal(w.untrusted, 0);
    assert.equal(lastCheckpoint(w.accepted)?.record.counter, base.counter + 1);
    // Unendorsed: a line under a third key is not trusted.
    const stranger = new CheckpointSigner(randomBytes(32));
    const odd: CheckpointRecord = { ...base, counter: base.counter + 2, public_key: stranger.publicKey, next_public_key: null };
    appendCheckpoint(h.cpPath, { record: odd, signature: stranger.sign(odd) });
    assert.equal(walkTrust(readCheckpoints(h.cpPath), fp).untrusted, 1);
    h.cleanup();
  });
});

describe('bundles', () => {
  function bundled(h: Home, filter: { tool?: string } = {}): { bytes: Buffer; calls: string[]; uncovered: number } {
    const j = openJournals(h.dir, { readonly: true });
    try {
      const walk = walkTrust(readCheckpoints(h.cpPath));
      const r = buildBundle({ journals: j, calls: j.activity.listCalls(filter), checkpoints: walk.accepted, catalogText: (d) => (d === CATALOG ? CATALOG_TEXT : undefined) });
      return { bytes: bundleBytes(r.bundle), calls: r.bundle.calls, uncovered: r.uncovered.length };
    } finally {
      j.close();
    }
  }

  it('verifies offline from a directory holding nothing but the bundle, and says what it proves', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    a.journals.sessions.startSession({ session_id: 'sess-1', transport: 'stdio', client_name: 'agent', client_version: '1', protocol_version: null, peer_pid: 42, peer_uid: 1000, run_id: null, agent_release: null });
    generate(a.journals, h.clock, 9, 'deploy_preview');
    a.journals.sessions.event('sess-1', 'tools_listed', {});
    generate(a.journals, h.clock, 9, 'read_status');
    a.journals.sessions.startSession({ session_id: 'sess-other', transport: 'stdio', client_name: 'other', client_version: '1', protocol_version: null, peer_pid: 43, peer_uid: 1000, run_id: null, agent_release: null });
    a.close();
    const { bytes, calls } = bundled(h, { tool: 'read_status' });
    assert.equal(calls.length, 9);
    const parsed = JSON.parse(bytes.toString('utf8')) as { sessions: { ids: string[] } };
    assert.deepEqual(parsed.sessions.ids, ['sess-1'], 'only the sessions the selected calls ran in');
    const elsewhere = mkdtempSync(join(tmpdir(), 'postern-offline-'));
    const file = join(elsewhere, 'incident.bundle');
    writeFileSync(file, bytes);
    h.cleanup(); // no journal, no vault, no home: only the file
    const proof = verifyBundle(readFileSync(file));
    assert.equal(proof.calls, 9);
    assert.equal(proof.calls_with_outcome, 6);
    assert.equal(proof.pinned, false);
    assert.equal(proof.keys.length, 1);
    assert.ok(proof.first_seq >= 1 && proof.last_seq >= proof.first_seq);
    assert.deepEqual({ ...proof.sessions, entries: 0 }, { sessions: 1, entries: 0, session_entries: 2, calls_without_session: 0 }, 'its start and its event');
    assert.ok(proof.sessions!.entries >= 2);
    const pinned = verifyBundle(readFileSync(file), { key: proof.keys[0]! });
    assert.equal(pinned.pinned, true);
    assert.throws(() => verifyBundle(readFileSync(file), { key: keyFingerprint('ab'.repeat(32)) }), (e) => isPosternError(e, 'AUDIT_BUNDLE_INVALID'));
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it('one changed byte anywhere is refused', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 4);
    a.close();
    const { bytes } = bundled(h);
    verifyBundle(bytes);
    const step = Math.max(1, Math.floor(bytes.length / 400));
    let tried = 0;
    for (let at = 0; at < bytes.length; at += step) {
      const changed = Buffer.from(bytes);
      changed[at] = changed[at] === 0x31 ? 0x32 : 0x31; // another byte: '1' or '2'
      assert.throws(() => verifyBundle(changed), (e) => isPosternError(e, 'AUDIT_BUNDLE_INVALID') && !/\n/.test(e.message), `byte ${at} (${JSON.stringify(bytes.subarray(Math.max(0, at - 20), at + 20).toString())})`);
      tried++;
    }
    assert.ok(tried >= 300);
    assert.throws(() => verifyBundle(bytes.subarray(0, bytes.length - 2)), (e) => isPosternError(e, 'AUDIT_BUNDLE_INVALID'));
    h.cleanup();
  });

  it('calls journaled after the last checkpoint are left out, not bundled unproven', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 3);
    a.close();
    // Written without the keeper (as a crash would leave them): no checkpoint covers them.
    const j = openJournals(h.dir);
    generate(j, h.clock, 2);
    j.close();
    const r = bundled(h);
    assert.equal(r.uncovered, 2);
    assert.equal(r.calls.length, 3);
    verifyBundle(r.bytes);
    h.cleanup();
  });
});

describe('prune', () => {
  it('removes old entries, keeps the chains verifiable against the signed checkpoint, and keeps what retention needs', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    const firstKey = keys;
    const old = generate(a.journals, h.clock, 6, 'old_tool');
    h.clock.advance(40 * DAY);
    const cutoff = h.clock.now().toISOString();
    h.clock.advance(DAY);
    const recent = generate(a.journals, h.clock, 3, 'recent_tool');
    a.close();
    // Everything before `cutoff` is older than the retention window except what `recent` holds;
    // take a retention of 45 days so the old keys are still inside it first.
    const b = openAnchoredJournals(h.ctx());
    const retention = (days: number) => (c: { state: string; completed_at: string | null }) => c.state === 'completed' && replayWindowOpen(c.completed_at, { now: h.clock.now(), days });
    const held = b.journals.prunePlan(cutoff, retention(45));
    assert.equal(held.activity.stoppedBy, 'retention', 'a completed key inside the window stops the cut');
    assert.equal(held.activity.entries, 0);
    const plan = b.journals.prunePlan(cutoff, retention(30));
    assert.ok(plan.activity.entries > 0 && plan.activity.stoppedBy === 'date', JSON.stringify(plan));
    const bases = b.journals.prune(plan);
    b.journals.sessions.event(null, 'journal_pruned', { before: cutoff });
    b.keeper.checkpointNow('prune', cutoff);
    // The keys of removed calls still never run again.
    assert.equal(b.journals.activity.findByKey('old_tool', `k-old_tool-${firstKey}`)?.state, 'completed');
    assert.equal(b.journals.activity.getCall(old[0]!), undefined);
    assert.ok(b.journals.activity.getCall(recent[0]!) !== undefined);
    b.close();
    const j = openJournals(h.dir, { readonly: true });
    const v = j.activity.verify();
    assert.ok(v.ok && v.base?.seq === bases.activity.seq, JSON.stringify(v));
    assert.equal(j.sessions.verify().ok, true);
    j.close();
    const i = judged(h);
    assert.ok(i.kind === 'judged' && i.verdict.kind === 'ok', JSON.stringify(i.kind === 'judged' ? i.verdict : i.kind));
    assert.ok(readCheckpoints(h.cpPath).some((l) => l !== 'malformed' && l.record.reason === 'prune' && l.record.pruned_before === cutoff));
    // A claim of a removed call deleted behind the journal's back: the kept claims digest tells.
    const db = new Database(join(h.dir, 'activity.db'));
    db.prepare(`DELETE FROM idempotency WHERE tool = 'old_tool' AND key = ?`).run(`k-old_tool-${firstKey}`);
    db.close();
    const k = openJournals(h.dir, { readonly: true });
    const broken = k.activity.verify();
    assert.ok(!broken.ok && broken.reason === 'claim_mismatch');
    k.close();
    h.cleanup();
  });

  it('never cuts past an intent with no outcome', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 2);
    h.clock.advance(60_000);
    const open = callRecord({ idempotency_key: null, args_digest: null });
    a.journals.activity.recordIntent({ ...open, target: httpTarget });
    generate(a.journals, h.clock, 2);
    h.clock.advance(DAY);
    const plan = a.journals.prunePlan(h.clock.now().toISOString(), () => false);
    assert.equal(plan.activity.stoppedBy, 'open_call');
    const openSeq = a.journals.activityEntrySeqs(open.call_id)[0]!;
    assert.equal(plan.activity.cut, openSeq - 1);
    a.close();
    h.cleanup();
  });

  it('a bundle of calls kept after a prune still verifies', () => {
    const h = home();
    const a = openAnchoredJournals(h.ctx());
    generate(a.journals, h.clock, 4, 'old_tool');
    h.clock.advance(60 * DAY);
    const cutoff = h.clock.now().toISOString();
    generate(a.journals, h.clock, 4, 'recent_tool');
    a.journals.prune(a.journals.prunePlan(cutoff, () => false));
    a.keeper.checkpointNow('prune', cutoff);
    a.close();
    const j = openJournals(h.dir, { readonly: true });
    const walk = walkTrust(readCheckpoints(h.cpPath));
    const r = buildBundle({ journals: j, calls: j.activity.listCalls(), checkpoints: walk.accepted, catalogText: () => undefined });
    j.close();
    assert.equal(r.bundle.calls.length, 4);
    assert.equal(verifyBundle(bundleBytes(r.bundle)).calls, 4);
    h.cleanup();
  });
});
