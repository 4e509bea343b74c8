// @subject time: drain windows measured in days (run again a year ahead by .ci/run)
// Seed 004 phase 3: "los logs cuentan quién la sigue llamando y el apagado solo
// ocurre cuando el conteo llega a cero". Drain counts over a journal written
// through the journal API (a generated journal), read back as `audit revisions` does.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openJournals, type CallRecord } from '../../../src/journal/index.js';
import { readDrain } from '../../../src/cli/drain-journal.js';
import { renderDrain, retiredInUse, type RevisionUsage, type WaitingCall } from '../../../src/cli/revision-drain.js';
import { ManualClock } from '../../helpers/clock.js';
import { catalog, objectSchema, str, tool } from '../contracts/helpers.ts';

const rev = (n: number, extra: Record<string, unknown> = {}) => ({
  revision: n,
  input: objectSchema({ pedido_id: str() }, ['pedido_id']),
  http: { target: 'api', method: 'GET', path: '/pedidos/{pedido_id}' },
  ...extra,
});
const accepted = catalog({ buscar_pedido: tool([rev(1, { deprecated: '2026-10-01' }), rev(2, { previous: 'adapt' }), rev(3, { previous: 'pin' })]), other: tool([rev(1)]) });

let n = 0;
const call = (over: Partial<CallRecord>): CallRecord => ({
  call_id: `call-${++n}`,
  session_id: 'S-old',
  run_id: null,
  tool: 'buscar_pedido',
  revision_seen: 1,
  revision_executed: 1,
  handler_revision: 'test',
  raw_arguments: { pedido_id: 'P-1' },
  normalized_arguments: null,
  adapter_applied: null,
  idempotency_key: null,
  args_digest: null,
  approval: null,
  decision_path: ['admit', 'resolve:current', 'validate'],
  side_effect_started: false,
  at: '2026-03-01T00:00:00.000Z',
  ...over,
});
const target = { kind: 'http', method: 'GET', url: 'https://api.example.com/pedidos/P-1' } as const;

describe('audit revisions: drain counts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-drain-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  const tick = (): string => {
    clock.advance(60_000);
    return clock.now().toISOString();
  };
  {
    const j = openJournals(dir, { clock });
    const start = (id: string): void => j.sessions.startSession({ session_id: id, transport: 'stdio-socket', client_name: 'c', client_version: '1', protocol_version: '2025-11-25', peer_pid: null, peer_uid: null, run_id: null, agent_release: null });
    // A daemon that ran before: its session never closed (it died), and must not count as live.
    j.sessions.event(null, 'daemon_started', {});
    start('S-dead');
    j.activity.recordIntent({ ...call({ session_id: 'S-dead', at: tick() }), target });
    j.sessions.event(null, 'daemon_started', {});
    start('S-old');
    j.sessions.event('S-old', 'tools_listed', { revisions: { buscar_pedido: 1, other: 1 } });
    start('S-new');
    j.sessions.event('S-new', 'tools_listed', { revisions: { buscar_pedido: 3 } });
    start('S-gone');
    j.sessions.event('S-gone', 'tools_listed', { revisions: { buscar_pedido: 1 } });
    j.sessions.endSession('S-gone', 'disconnected');
    // r1 consumers: adapted (bridge), pinned, migrated, rejected, replayed; one per-call approval and one session grant reused.
    j.activity.recordIntent({ ...call({ at: tick(), decision_path: ['admit', 'resolve:bridge', 'validate'], adapter_applied: 'r1→r2: x' }), target });
    j.activity.recordIntent({ ...call({ at: tick(), decision_path: ['admit', 'resolve:pin', 'validate'], approval: { mode: 'per-call', id: 'card-1', decided_by: 'alice', decided_at: 'x', outcome: 'approved' } }), target });
    j.activity.recordIntent({ ...call({ at: tick(), decision_path: ['admit', 'resolve:bridge', 'approve', 'recheck', 'recheck:migrated→r2'], approval: { mode: 'session', id: 'card-2', decided_by: 'alice', decided_at: 'x', outcome: 'approved' } }), target });
    j.activity.recordIntent({ ...call({ at: tick(), approval: { mode: 'session', id: 'card-2', decided_by: 'alice', decided_at: 'x', outcome: 'approved' } }), target });
    j.activity.recordRejected({ ...call({ at: tick(), approval: { mode: 'per-call', id: 'card-3', decided_by: 'bob', decided_at: 'x', outcome: 'denied' } }), error_code: 'APPROVAL_DENIED', message: 'denied' });
    j.activity.recordRejected({ ...call({ at: tick(), approval: { mode: 'per-call', id: 'card-4', decided_by: null, decided_at: 'x', outcome: 'timeout' } }), error_code: 'APPROVAL_TIMEOUT', message: 'timeout' });
    j.activity.recordReplay({ ...call({ at: tick() }), replay_of: 'call-2' });
    // Unplanned: refused before a contract was resolved.
    j.activity.recordRejected({ ...call({ at: tick(), revision_seen: null, revision_executed: null }), error_code: 'SECRET_IN_ARGUMENTS', message: 'secret' });
    // S-new on r3, current; S-old's last call is later than its listing: it now plans against r2.
    j.activity.recordIntent({ ...call({ session_id: 'S-new', revision_seen: 3, revision_executed: 3, at: tick() }), target });
    j.activity.recordIntent({ ...call({ session_id: 'S-old', tool: 'other', at: tick() }), target });
    j.close();
  }

  const read = (opts: { since?: string; tool?: string; waiting?: readonly WaitingCall[] } = {}): RevisionUsage[] => {
    const j = openJournals(dir, { readonly: true });
    try {
      return readDrain(j, accepted, opts);
    } finally {
      j.close();
    }
  };
  const of = (rows: RevisionUsage[], tool: string, revision: number | null) => rows.find((r) => r.tool === tool && r.revision === revision);

  it('counts every call once by how it ran or ended, and human-handled calls beside', () => {
    const r1 = of(read(), 'buscar_pedido', 1);
    assert.deepEqual(r1?.counts, { current: 2, adapted: 1, pinned: 1, migrated: 1, rejected: 2, replayed: 1, human_handled: 3 });
    assert.equal(r1?.status, 'deprecated');
    assert.equal(r1?.deprecated, '2026-10-01');
    assert.equal(r1?.last_seen, '2026-03-01T00:08:00.000Z');
  });

  it('live sessions: open sessions of the latest daemon start, on the revision they last listed or called', () => {
    const rows = read();
    assert.equal(of(rows, 'buscar_pedido', 1)?.live_sessions, 1, 'S-old (S-dead died with its daemon, S-gone closed)');
    assert.equal(of(rows, 'buscar_pedido', 3)?.live_sessions, 1);
    assert.equal(of(rows, 'other', 1)?.live_sessions, 1);
  });

  it('served revisions nobody called show with zeros; unplanned refusals have their own row', () => {
    const rows = read();
    assert.deepEqual(of(rows, 'buscar_pedido', 2), { tool: 'buscar_pedido', revision: 2, status: 'served', deprecated: null, counts: { current: 0, adapted: 0, pinned: 0, migrated: 0, rejected: 0, replayed: 0, human_handled: 0 }, last_seen: null, live_sessions: 0 });
    assert.equal(of(rows, 'buscar_pedido', 3)?.status, 'current');
    assert.equal(of(rows, 'buscar_pedido', null)?.counts.rejected, 1);
    assert.equal(of(rows, 'buscar_pedido', null)?.status, 'not_in_catalog');
  });

  it('--since and --tool narrow the counts (not the live sessions)', () => {
    const rows = read({ since: '2026-03-01T00:07:00.000Z', tool: 'buscar_pedido' });
    assert.ok(rows.every((r) => r.tool === 'buscar_pedido'));
    assert.deepEqual(of(rows, 'buscar_pedido', 1)?.counts, { current: 0, adapted: 0, pinned: 0, migrated: 0, rejected: 1, replayed: 1, human_handled: 0 });
    assert.equal(of(rows, 'buscar_pedido', 1)?.live_sessions, 1);
  });

  it('a daemon whose last event is its stop has no live sessions', () => {
    const j = openJournals(dir, { clock });
    j.sessions.event(null, 'daemon_stopped', {});
    j.close();
    assert.ok(read().every((r) => r.live_sessions === 0));
  });

  it('retiring a revision used within the window is reported; a drained one is not', () => {
    const retiring = catalog({ buscar_pedido: tool([rev(1, { deprecated: '2026-10-01', retired: {} }), rev(2, { previous: 'adapt', retired: {} }), rev(3, { previous: 'pin' })]), other: tool([rev(1)]) });
    const found = retiredInUse(read(), accepted, retiring);
    assert.deepEqual(found.map((f) => [f.tool, f.revision, f.calls]), [['buscar_pedido', 1, 8]]);
    assert.deepEqual(retiredInUse(read({ since: '2026-04-01T00:00:00.000Z' }), accepted, retiring), []);
  });

  it('--waiting: the calls in the approval queue count under their planned revision, also one with no journaled call', () => {
    const waiting = [
      { tool: 'buscar_pedido', revision_seen: 1 },
      { tool: 'buscar_pedido', revision_seen: 1 },
      { tool: 'buscar_pedido', revision_seen: 3 },
      { tool: 'new_tool', revision_seen: 7 },
      { tool: 'other', revision_seen: null },
    ];
    const rows = read({ waiting });
    const at = (tool: string, revision: number | null) => rows.find((r) => r.tool === tool && r.revision === revision)?.awaiting_approval;
    assert.equal(at('buscar_pedido', 1), 2);
    assert.equal(at('buscar_pedido', 3), 1);
    assert.equal(at('new_tool', 7), 1, 'a revision no journaled call names still gets its row');
    assert.equal(at('other', null), 1);
    assert.equal(at('other', 1), 0, 'asked: zero, not unknown');
    assert.ok(read().every((r) => !('awaiting_approval' in r)), 'not asked: no count (unknown), and no WAITING column');
    assert.match(renderDrain(rows), /\bWAITING$/m);
    assert.doesNotMatch(renderDrain(read()), /WAITING/);
    assert.deepEqual(read({ waiting, tool: 'new_tool' }).map((r) => [r.tool, r.awaiting_approval]), [['new_tool', 1]]);
  });

  it('the table escapes what an agent controls', () => {
    const text = renderDrain([{ tool: 'x\x1b[2Ky', revision: 1, status: 'current', deprecated: null, counts: { current: 1, adapted: 0, pinned: 0, migrated: 0, rejected: 0, replayed: 0, human_handled: 0 }, last_seen: null, live_sessions: 0 }]);
    assert.ok(!text.includes('\x1b'));
    assert.match(text, /^TOOL\s+REV\s+STATUS\s+CURRENT/);
  });
});
