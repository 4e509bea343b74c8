/**
 * The Sessions journal has one port in the daemon (src/daemon/services/journal-event.ts),
 * as the Activity journal has journal-port.ts: a write that fails is logged
 * and never thrown, and no other daemon code writes the journal itself, so no
 * failed write is dropped by a `try {} catch {}` of its own.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Journals } from '../../../src/journal/index.js';
import { PosternError } from '../../../src/rules/errors.js';
import { sessionsJournal } from '../../../src/daemon/services/journal-event.js';

const SRC = join(import.meta.dirname, '../../../src');
const PORT = join(SRC, 'daemon/services/journal-event.ts');
/** A write of the Sessions journal (reads — events, latestEvent, listSessions — are anyone's). */
const WRITE = /\bjournals\.sessions\.(?:event|startSession|endSession)\(/;

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourcesUnder(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : []));
}

/** Journals whose Sessions journal refuses every write. */
function refusing(): Journals {
  const refuse = (): never => {
    throw new PosternError('JOURNAL_UNAVAILABLE', 'sessions journal: the disk is full');
  };
  return { sessions: { event: refuse, startSession: refuse, endSession: refuse } } as unknown as Journals;
}

describe('the Sessions journal port', () => {
  it('logs a write that fails, for every kind of write, and does not throw', () => {
    const lines: string[] = [];
    const port = sessionsJournal(refusing(), (l) => void lines.push(l));
    port.event('s1', 'tools_listed', {});
    port.startSession({ session_id: 's1', transport: 'stdio-socket', client_name: null, client_version: null, protocol_version: null, peer_pid: null, peer_uid: null, run_id: null, agent_release: null });
    port.endSession('s1', 'disconnected');
    assert.deepEqual(lines, Array(3).fill('journal: sessions journal: the disk is full'));
  });

  it('is the only daemon code that writes the Sessions journal', () => {
    const writers = [...sourcesUnder(join(SRC, 'daemon')), ...sourcesUnder(join(SRC, 'mcp')), ...sourcesUnder(join(SRC, 'approvals'))]
      .filter((f) => f !== PORT && WRITE.test(readFileSync(f, 'utf8')))
      .map((f) => relative(SRC, f));
    assert.deepEqual(writers, []);
  });
});
