// @subject time: timelines (run again a year ahead by .ci/run)
/**
 * `postern audit timeline SESSION`: journals written through the journal API
 * (two sessions, calls with approvals, outcomes, a rejection, and daemon-wide
 * events before, during and after the session), read back by the built CLI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openJournals } from '../../src/journal/index.js';
import type { CallRecord, SessionTimeline } from '../../src/journal/index.js';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { wallClock } from '../helpers/clock.js';

const EVIL = 'evil\x1b[2K\u202etxt';
const S1 = 'a1b2c3d4-1111-4111-8111-111111111111';
const S2 = 'e5f6a7b8-2222-4222-8222-222222222222';
const A = 'c0ffee01-0000-4000-8000-000000000001';
const B = 'c0ffee02-0000-4000-8000-000000000002';
const OTHER = 'c0ffee03-0000-4000-8000-000000000003';

/** Journal times advance one minute per write, from 2026-03-01T00:01:00Z. */
const minute = (n: number): string => new Date(Date.parse('2026-03-01T00:00:00.000Z') + n * 60_000).toISOString();

function call(over: Partial<CallRecord> & Pick<CallRecord, 'call_id' | 'tool' | 'at'>): CallRecord {
  return {
    session_id: S1,
    run_id: null,
    revision_seen: 1,
    revision_executed: 1,
    handler_revision: '0.1.0+sha256:cafe',
    raw_arguments: {},
    normalized_arguments: {},
    adapter_applied: null,
    idempotency_key: null,
    args_digest: null,
    approval: null,
    decision_path: ['admit'],
    side_effect_started: false,
    ...over,
  };
}

function seed(home: string): void {
  let t = Date.parse('2026-03-01T00:00:00.000Z');
  const j = openJournals(join(home, 'journal'), { clock: wallClock(() => new Date((t += 60_000))) });
  try {
    j.sessions.event(null, 'daemon_started', { version: '0.1.0' });
    j.sessions.startSession({ session_id: S1, transport: 'stdio-socket', client_name: EVIL, client_version: '2.0', protocol_version: '2025-11-25', peer_pid: 4242, peer_uid: null, run_id: null, agent_release: null });
    j.sessions.event(S1, 'tools_listed', { revisions: { deploy: 1 } });
    // Admitted a little before its intent, approved in between.
    j.activity.recordIntent({
      ...call({ call_id: A, tool: 'deploy', at: minute(3.5), approval: { mode: 'per-call', id: 'appr-1', decided_by: 'alice', decided_at: minute(3.75), outcome: 'approved' } }),
      target: { kind: 'http', method: 'POST', url: 'https://api.example.com/deploy' },
    });
    j.sessions.event(null, 'catalog_accepted', { digest: 'sha256:new', toolset: 2 });
    j.sessions.startSession({ session_id: S2, transport: 'stdio-socket', client_name: 'codex', client_version: '1.0', protocol_version: '2025-11-25', peer_pid: 777, peer_uid: null, run_id: null, agent_release: null });
    j.activity.recordIntent({ ...call({ call_id: OTHER, session_id: S2, tool: 'deploy', at: minute(6.5) }), target: { kind: 'http', method: 'POST', url: 'https://api.example.com/deploy' } });
    j.activity.recordOutcome(A, { status: 'success', side_effect_started: true, response_status: 201, duration_ms: 180_000 });
    j.activity.recordRejected({ ...call({ call_id: B, tool: `deploy${EVIL}`, at: minute(8.5), raw_arguments: { note: EVIL } }), error_code: 'CONTRACT_STALE', message: 'revision 1 is rejected' });
    j.sessions.endSession(S1, 'disconnected');
    j.sessions.event(null, 'lock', { reason: 'idle' });
  } finally {
    j.close();
  }
}

describe('postern audit timeline', () => {
  let sb: CliSandbox;
  before(async () => {
    sb = await cliSandbox();
    seed(sb.home);
  });
  after(() => sb.cleanup());

  const timeline = async (args: string[]): Promise<SessionTimeline> => {
    const r = await sb.run(['audit', 'timeline', ...args, '--json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as SessionTimeline;
  };

  it("interleaves the session's events, its calls' steps and the daemon-wide events meanwhile, in time order", async () => {
    const t = await timeline([S1.slice(0, 8)]);
    assert.equal(t.session_id, S1);
    assert.equal(t.truncated, false);
    const seen = t.entries.map((e) => `${e.source}:${e.kind}${e.call_id === null ? '' : `:${e.call_id.slice(0, 8)}`}`);
    assert.deepEqual(seen, [
      'session:session_started',
      'session:tools_listed',
      'call:admitted:c0ffee01',
      'call:approval:c0ffee01',
      'call:intent:c0ffee01',
      'daemon:catalog_accepted',
      'call:outcome:c0ffee01',
      'call:admitted:c0ffee02',
      'call:rejected:c0ffee02',
      'session:session_closed',
    ]);
    // Times never go backwards, and the daemon's start and the lock after the close are not this session's.
    const times = t.entries.map((e) => e.at);
    assert.deepEqual(times, [...times].sort());
    assert.ok(!seen.some((s) => s.includes('daemon_started') || s.includes('lock') || s.includes('c0ffee03')));
    const approval = t.entries.find((e) => e.kind === 'approval')!;
    assert.deepEqual(approval.data, { mode: 'per-call', outcome: 'approved', decided_by: 'alice', approval_id: 'appr-1' });
    assert.equal(t.entries.find((e) => e.kind === 'outcome')?.data['response_status'], 201);
  });

  it('a session still open runs to the newest daemon event', async () => {
    const t = await timeline([S2]);
    const seen = t.entries.map((e) => `${e.source}:${e.kind}`);
    assert.deepEqual(seen, ['session:session_started', 'call:admitted', 'call:intent', 'daemon:lock']);
  });

  it('prints a table with agent-controlled text escaped', async () => {
    const r = await sb.run(['audit', 'timeline', S1]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('\x1b') && !r.stdout.includes('\u202e'), 'raw control characters reached the terminal');
    assert.match(r.stdout, /^session a1b2c3d4-1111-4111-8111-111111111111: 10 entries, oldest first$/m);
    assert.match(r.stdout, /TIME +FROM +WHAT +CALL +TOOL +DATA/);
    assert.match(r.stdout, /daemon +catalog_accepted/);
    assert.ok(r.stdout.includes('deployevil\\x1b[2K\\u202Etxt'), r.stdout);
  });

  it('says when a limit cut it, and refuses an unknown session', async () => {
    const t = await timeline([S1, '--limit', '1']);
    assert.equal(t.truncated, true);
    const r = await sb.run(['audit', 'timeline', 'ffffffff']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: INPUT_INVALID: no session ffffffff in the journals$/m);
  });
});
