/**
 * The Sessions row's declared identity (README "Execution identity"): a run
 * id or agent release a session declares only after its row was written (a
 * client lists its tools before it calls) is journaled as a
 * `session_identified` entry, and the row reads the first one; what the
 * start already had is never overwritten.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openJournals } from '../../../src/journal/index.js';
import { steppingClock, tempJournalDir } from './helpers.js';

const start = (session_id: string, run_id: string | null, agent_release: string | null) => ({ session_id, transport: 'stdio-socket', client_name: 'c', client_version: '1', protocol_version: '2025-11-25', peer_pid: null, peer_uid: null, run_id, agent_release });

describe('sessions journal: identity declared after the start', () => {
  it('fills the row from the first session_identified entry, and keeps what the start declared', () => {
    const { dir, cleanup } = tempJournalDir();
    const j = openJournals(join(dir, 'journal'), { clock: steppingClock() });
    try {
      j.sessions.startSession(start('s-late', null, null));
      j.sessions.event('s-late', 'tools_listed', { revisions: { t: 1 }, toolset: 'x' });
      j.sessions.event('s-late', 'session_identified', { run_id: 'run-1', agent_release: 'rel-1' });
      j.sessions.event('s-late', 'session_identified', { run_id: 'run-2', agent_release: 'rel-2' });
      j.sessions.startSession(start('s-early', 'run-0', null));
      j.sessions.event('s-early', 'session_identified', { run_id: 'run-other', agent_release: 'rel-9' });
      j.sessions.startSession(start('s-none', null, null));
      const rows = new Map(j.sessions.listSessions().map((r) => [r.session_id, r]));
      assert.deepEqual([rows.get('s-late')?.run_id, rows.get('s-late')?.agent_release], ['run-1', 'rel-1']);
      assert.deepEqual([rows.get('s-early')?.run_id, rows.get('s-early')?.agent_release], ['run-0', 'rel-9']);
      assert.deepEqual([rows.get('s-none')?.run_id, rows.get('s-none')?.agent_release], [null, null]);
      assert.equal(j.sessions.verify().ok, true);
    } finally {
      j.close();
      cleanup();
    }
  });
});
