// @subject time: session times (run again a year ahead by .ci/run)
/**
 * Sessions journal: a session's start (every field), its events and its end
 * round-trip; daemon-wide events have no session; listSessions filters by
 * start time; it survives a restart; mistakes are INTERNAL.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openJournals } from '../../../src/journal/index.js';
import type { SessionStart } from '../../../src/journal/index.js';
import { steppingClock, tempJournalDir } from './helpers.js';

const start = (session_id: string, over: Partial<SessionStart> = {}): SessionStart => ({
  session_id,
  transport: 'unix',
  client_name: 'claude-code',
  client_version: '2.1.0',
  protocol_version: '2025-11-25',
  peer_pid: 4242,
  peer_uid: 1000,
  run_id: 'run-1',
  agent_release: 'agent 7',
  ...over,
});

describe('sessions journal', () => {
  const t = tempJournalDir();
  after(() => t.cleanup());

  it('round-trips a session, its events and its end, and survives a restart', () => {
    const j = openJournals(t.dir, { clock: steppingClock('2026-05-01T00:00:00.000Z') });
    j.sessions.event(null, 'daemon_started', { version: '0.1.0' }); // 1s
    j.sessions.startSession(start('s1')); // 2s
    j.sessions.event('s1', 'tools_listed', { revisions: { deploy_preview: 2, github_create_issue: 1 } }); // 3s
    j.sessions.event('s1', 'grant_given', { tool: 'deploy_preview', authority_digest: 'sha256:a', grant_id: 'g1' }); // 4s
    j.sessions.startSession(start('s2', { client_name: null, client_version: null, peer_pid: null, peer_uid: null, run_id: null, agent_release: null })); // 5s
    j.sessions.event(null, 'lock', { reason: 'idle' }); // 6s
    j.sessions.event('s1', 'grant_revoked', { grant_id: 'g1', reason: 'lock' }); // 7s
    j.sessions.endSession('s1', 'client disconnected'); // 8s
    j.close();

    const k = openJournals(t.dir);
    const sessions = k.sessions.listSessions();
    assert.deepEqual(
      sessions.map((s) => [s.session_id, s.ended_at, s.end_reason]),
      [
        ['s2', null, null],
        ['s1', '2026-05-01T00:00:08.000Z', 'client disconnected'],
      ],
    );
    const s1 = sessions[1]!;
    assert.deepEqual({ ...s1, seq: 0, started_at: '', ended_at: null, end_reason: null }, { ...start('s1'), seq: 0, started_at: '', ended_at: null, end_reason: null });
    assert.equal(s1.started_at, '2026-05-01T00:00:02.000Z');
    assert.equal(sessions[0]!.client_name, null);

    assert.deepEqual(
      k.sessions.events('s1').map((e) => [e.type, e.data]),
      [
        ['session_started', { ...start('s1') }],
        ['tools_listed', { revisions: { deploy_preview: 2, github_create_issue: 1 } }],
        ['grant_given', { tool: 'deploy_preview', authority_digest: 'sha256:a', grant_id: 'g1' }],
        ['grant_revoked', { grant_id: 'g1', reason: 'lock' }],
        ['session_closed', { reason: 'client disconnected' }],
      ],
    );
    assert.deepEqual(
      k.sessions.events(null).map((e) => e.type),
      ['daemon_started', 'lock'],
    );
    assert.deepEqual(k.sessions.listSessions({ since: '2026-05-01T00:00:03.000Z' }).map((s) => s.session_id), ['s2']);
    assert.deepEqual(k.sessions.listSessions({ limit: 1 }).map((s) => s.session_id), ['s2']);
    assert.equal(k.sessions.verify().ok, true);

    const lines: string[] = [];
    k.sessions.exportJsonl((l) => lines.push(l));
    assert.equal(lines.length, 8);
    assert.equal(JSON.parse(lines[1]!).data.client_name, 'claude-code');
    k.close();
  });

  it('refuses a second start of one session id and an unknown event type with INTERNAL', () => {
    const j = openJournals(t.dir);
    assert.throws(() => j.sessions.startSession(start('s1')), { code: 'INTERNAL' });
    assert.throws(() => j.sessions.event('s1', 'made_up' as never, {}), { code: 'INTERNAL' });
    assert.equal(j.sessions.verify().ok, true);
    j.close();
  });

  it('a read-only open of a journal that does not exist refuses', () => {
    const u = tempJournalDir();
    assert.throws(() => openJournals(u.dir, { readonly: true }), { code: 'JOURNAL_UNAVAILABLE' });
    u.cleanup();
  });
});
