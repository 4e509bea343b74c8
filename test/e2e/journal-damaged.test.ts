/**
 * A journal file with a damaged page, as the operator meets it: the daemon
 * refuses to start with JOURNAL_DAMAGED (never `INTERNAL: unexpected
 * failure`), `doctor` names the journal files, and `audit verify` says which
 * entries cannot be read and exits 1 — one line each, no stack trace.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { install, type Installation } from '../helpers/daemon.js';
import { damagePage } from '../helpers/journal-damage.js';

describe('a damaged journal file', () => {
  let inst: Installation;

  before(async () => {
    inst = await install({ secrets: [] });
    for (let i = 0; i < 2; i += 1) {
      await inst.startDaemon();
      await inst.stopDaemon();
    }
    // The sessions journal's entries table root: every entry is behind it.
    damagePage(join(inst.sb.home, 'journal', 'sessions.db'), 'entries-root');
  });
  after(() => inst.cleanup());

  const noInternal = (text: string): void => {
    assert.doesNotMatch(text, /INTERNAL|unexpected failure|\n\s+at /, 'a named error, no stack trace');
  };

  it('the daemon refuses to start: JOURNAL_DAMAGED in one line that says what to do', async () => {
    const r = await inst.sb.run(['daemon', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 1);
    noInternal(r.stderr);
    assert.match(r.stderr, /JOURNAL_DAMAGED: .*corrupt.*audit verify/);
  });

  it('audit verify names the unreadable range and exits 1', async () => {
    const r = await inst.sb.run(['audit', 'verify']);
    assert.equal(r.code, 1, r.stderr);
    noInternal(r.stdout + r.stderr);
    assert.match(r.stdout, /sessions journal: DAMAGED from seq 1 to the end: .*\(unreadable\); 0 entries before it are intact/);
    const json = await inst.sb.run(['audit', 'verify', '--json']);
    const parsed = JSON.parse(json.stdout) as { sessions: { ok: boolean; reason: string; first_bad_seq: number; unreadable_to: number | null } };
    assert.deepEqual(
      { ok: parsed.sessions.ok, reason: parsed.sessions.reason, first_bad_seq: parsed.sessions.first_bad_seq, unreadable_to: parsed.sessions.unreadable_to },
      { ok: false, reason: 'unreadable', first_bad_seq: 1, unreadable_to: null },
    );
  });

  it('doctor names the journal files', async () => {
    const r = await inst.sb.run(['doctor']);
    noInternal(r.stdout + r.stderr);
    assert.match(r.stdout, /warning\s+journal files\s+.*corrupt/);
  });
});
