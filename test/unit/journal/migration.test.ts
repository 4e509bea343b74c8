// @subject time: journal times across schema versions (run again a year ahead by .ci/run)
/**
 * The activity journal's schema migration (v2 → v3: the leaner indexes). A v2
 * file is built here with the v2 DDL, holding exactly the rows an anchored
 * journal wrote (so its anchor and checkpoints still match); then the current
 * code opens it. Indexes are not part of the chain: after the migration the
 * rows are byte for byte what they were, `verify` passes, the anchor is
 * accepted and a bundle exported afterwards verifies offline. A read-only
 * open (the audit, on a copy) reads a v2 file without changing it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { openAnchoredJournals } from '../../../src/journal/anchor/index.js';
import { ACTIVITY_SCHEMA, ENTRIES_INDEX_NAMES } from '../../../src/journal/activity-schema.js';
import { readCheckpoints } from '../../../src/journal/checkpoint/file.js';
import { walkTrust } from '../../../src/journal/checkpoint/record.js';
import { buildBundle } from '../../../src/journal/bundle/build.js';
import { bundleBytes } from '../../../src/journal/bundle/format.js';
import { verifyBundle } from '../../../src/journal/bundle/verify.js';
import type { ManualClock } from '../../helpers/clock.js';
import { anchoredHome, callRecord, httpTarget, type AnchoredHome } from './helpers.js';

/** The activity schema as version 2 created it (kept verbatim: the fixture must not follow the current DDL). */
const V2_DDL = `
  CREATE TABLE entries (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('intent', 'rejected', 'replay', 'outcome')),
    call_id TEXT NOT NULL,
    session_id TEXT,
    tool TEXT NOT NULL,
    idempotency_key TEXT,
    error_code TEXT,
    claim TEXT CHECK (claim IN ('claimed', 'completed', 'released', 'outcome_unknown')),
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
  ) STRICT;
  CREATE UNIQUE INDEX entries_head ON entries(call_id) WHERE kind IN ('intent', 'rejected', 'replay');
  CREATE UNIQUE INDEX entries_outcome ON entries(call_id) WHERE kind = 'outcome';
  CREATE INDEX entries_intent ON entries(call_id) WHERE kind = 'intent';
  CREATE INDEX entries_head_at ON entries(at) WHERE kind IN ('intent', 'rejected', 'replay');
  CREATE INDEX entries_head_tool ON entries(tool, at) WHERE kind IN ('intent', 'rejected', 'replay');
  CREATE INDEX entries_head_session ON entries(session_id, at) WHERE kind IN ('intent', 'rejected', 'replay');
  CREATE INDEX entries_head_key ON entries(idempotency_key, at) WHERE kind IN ('intent', 'rejected', 'replay');
  CREATE INDEX entries_error ON entries(error_code) WHERE error_code IS NOT NULL;
  CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;
  CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN SELECT RAISE(ABORT, 'journal entries are append-only'); END;
  CREATE TABLE idempotency (
    tool TEXT NOT NULL,
    key TEXT NOT NULL,
    call_id TEXT NOT NULL UNIQUE,
    session_id TEXT,
    args_digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed', 'outcome_unknown')),
    intent_seq INTEGER NOT NULL,
    outcome_seq INTEGER,
    PRIMARY KEY (tool, key)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`;
const V2_INDEXES = ['entries_error', 'entries_head', 'entries_head_at', 'entries_head_key', 'entries_head_session', 'entries_head_tool', 'entries_intent', 'entries_outcome'];

const CATALOG_TEXT = 'tools: {}\n';
const CATALOG = createHash('sha256').update(CATALOG_TEXT).digest('hex');

const home = (): AnchoredHome => anchoredHome(CATALOG);

let n = 0;
/** Keyed calls with outcomes, a keyless read, a rejection with a key and an error outcome. */
function calls(j: Journals, clock: ManualClock, count: number): void {
  for (let i = 0; i < count; i++) {
    clock.advance(60_000);
    n += 1;
    const c = callRecord({ tool: i % 2 === 0 ? 'deploy_preview' : 'read_status', idempotency_key: i % 4 === 3 ? null : `k-${n}`, args_digest: `d-${n}`, handler_revision: `postern/0.1.0+catalog.${CATALOG.slice(0, 16)}` });
    if (i % 5 === 4) {
      j.activity.recordRejected({ ...c, error_code: 'VALIDATION_FAILED', message: 'bad' });
      continue;
    }
    j.activity.recordIntent({ ...c, target: httpTarget });
    const failed = i % 7 === 6;
    j.activity.recordOutcome(c.call_id, failed ? { status: 'error', side_effect_started: false, duration_ms: 2, error_code: 'TARGET_ERROR' } : { status: 'success', side_effect_started: true, duration_ms: 3, result: { n } });
  }
}

/** Rebuilds activity.db with the v2 DDL and the very same rows (what a v2 Postern left on disk). */
function rewriteAsV2(dir: string): void {
  const path = join(dir, 'activity.db');
  const old = join(dir, 'v2.db');
  const v2 = new Database(old);
  v2.exec(V2_DDL);
  v2.prepare('ATTACH DATABASE ? AS cur').run(path);
  v2.exec('INSERT INTO main.entries SELECT * FROM cur.entries; INSERT INTO main.idempotency SELECT * FROM cur.idempotency; INSERT INTO main.meta SELECT * FROM cur.meta; DETACH DATABASE cur;');
  v2.pragma(`application_id = ${ACTIVITY_SCHEMA.applicationId}`);
  v2.pragma('user_version = 2');
  v2.close();
  chmodSync(old, 0o600);
  renameSync(old, path);
}

function schemaOf(path: string): { version: number; indexes: string[] } {
  const db = new Database(path, { readonly: true });
  try {
    const indexes = db.prepare<[], string>(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL ORDER BY name`).pluck().all();
    return { version: db.pragma('user_version', { simple: true }) as number, indexes };
  } finally {
    db.close();
  }
}

function exported(j: Journals): string[] {
  const lines: string[] = [];
  j.activity.exportJsonl((l) => lines.push(l));
  return lines;
}

describe('activity schema v2 → v3', () => {
  it('a daemon open migrates a v2 journal: indexes only, the chain, the anchor, verify and bundles are untouched', () => {
    const h = home();
    try {
      const first = openAnchoredJournals(h.ctx());
      calls(first.journals, h.clock, 20);
      first.close();
      rewriteAsV2(h.dir);
      const path = join(h.dir, 'activity.db');
      assert.deepEqual(schemaOf(path), { version: 2, indexes: V2_INDEXES });
      const before = openJournals(h.dir, { readonly: true });
      const rowsBefore = exported(before);
      const headBefore = before.facts().activity.head;
      before.close();

      const a = openAnchoredJournals(h.ctx()); // the anchor check passes: same journal id, same head
      assert.equal(a.found.kind, 'anchored');
      assert.deepEqual(schemaOf(path), { version: ACTIVITY_SCHEMA.version, indexes: [...ENTRIES_INDEX_NAMES].sort() });
      assert.deepEqual(a.journals.facts().activity.head, headBefore);
      assert.deepEqual(exported(a.journals), rowsBefore, 'every row as it was');
      calls(a.journals, h.clock, 10); // the migrated file takes new calls
      assert.equal(a.journals.activity.verify().ok, true);
      a.close();

      const j = openJournals(h.dir, { readonly: true });
      try {
        const report = j.activity.verify();
        assert.ok(report.ok);
        assert.equal(report.entries, exported(j).length);
        assert.deepEqual(exported(j).slice(0, rowsBefore.length), rowsBefore);
        assert.equal(j.activity.listCalls({ idempotency_key: `k-${n - 1}` }).length, 1);
        assert.ok(j.activity.listCalls({ error_code: 'TARGET_ERROR' }).length > 0);
        const r = buildBundle({ journals: j, calls: j.activity.listCalls({ tool: 'deploy_preview' }), checkpoints: walkTrust(readCheckpoints(h.cpPath)).accepted, catalogText: (d) => (d === CATALOG ? CATALOG_TEXT : undefined) });
        assert.deepEqual(r.uncovered, []);
        const proof = verifyBundle(bundleBytes(r.bundle));
        assert.equal(proof.calls, 15);
      } finally {
        j.close();
      }
      // Idempotent: a second open finds version 3 and changes nothing.
      openJournals(h.dir).close();
      assert.deepEqual(schemaOf(path), { version: ACTIVITY_SCHEMA.version, indexes: [...ENTRIES_INDEX_NAMES].sort() });
    } finally {
      h.cleanup();
    }
  });

  it('a read-only open (the audit on a copy) reads a v2 journal as it is', () => {
    const h = home();
    try {
      const first = openAnchoredJournals(h.ctx());
      calls(first.journals, h.clock, 12);
      first.close();
      rewriteAsV2(h.dir);
      const copy = join(h.root, 'copy');
      mkdirSync(copy, { mode: 0o700 });
      for (const f of ['sessions.db', 'activity.db']) copyFileSync(join(h.dir, f), join(copy, f));
      for (const f of ['sessions.db', 'activity.db']) chmodSync(join(copy, f), 0o600);
      const j = openJournals(copy, { readonly: true });
      try {
        assert.equal(j.activity.verify().ok, true);
        assert.equal(j.activity.listCalls({ tool: 'deploy_preview' }).length, 6);
        assert.equal(j.activity.listCalls({ idempotency_key: `k-${n - 1}` }).length, 1);
        assert.equal(j.activity.listCalls({ since: '2031-05-01T00:05:00.000Z' }).length, 8);
      } finally {
        j.close();
      }
      assert.deepEqual(schemaOf(join(copy, 'activity.db')), { version: 2, indexes: V2_INDEXES });
    } finally {
      h.cleanup();
    }
  });

  it('a v1 journal (before `meta`) goes through both steps', () => {
    const h = home();
    try {
      const j0 = openJournals(h.dir, { clock: h.clock });
      calls(j0, h.clock, 6);
      j0.close();
      rewriteAsV2(h.dir);
      const path = join(h.dir, 'activity.db');
      const raw = new Database(path);
      raw.exec('DROP TABLE meta');
      raw.pragma('user_version = 1');
      raw.close();
      const j = openJournals(h.dir, { clock: h.clock });
      try {
        assert.equal(j.activity.verify().ok, true);
        assert.equal(j.facts().activity.journal_id, null, 'a migrated file has no id: it was never anchored');
      } finally {
        j.close();
      }
      assert.deepEqual(schemaOf(path), { version: ACTIVITY_SCHEMA.version, indexes: [...ENTRIES_INDEX_NAMES].sort() });
    } finally {
      h.cleanup();
    }
  });
});
