// @subject time: audit ranges (--since, --until) and retention (run again a year ahead by .ci/run)
/**
 * `postern audit` end to end: journals written directly through the journal
 * API (a session, a rejected call, intents with each kind of outcome, a call
 * left in progress, a replay), then read back by the built CLI in a child
 * process — tables, --json, filters, `show` of every status, one session, the
 * daemon's events, verify (intact, then tampered by an attacker who drops the
 * append-only triggers), export. Agent-controlled values carrying terminal
 * escape sequences and bidi controls must come out escaped everywhere.
 */
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openJournals } from '../../src/journal/index.js';
import { ANCHOR_FORMAT, sealAnchor, writeAnchor } from '../../src/journal/anchor/index.js';
import type { CallRecord, CallView, ChainReport, SessionEventRow, SessionRow } from '../../src/journal/index.js';
import { cliSandbox, type CliResult, type CliSandbox } from '../helpers/cli.js';
import { wallClock } from '../helpers/clock.js';

/** Erases the line and flips the text direction when printed raw. */
const EVIL = 'evil\x1b[2K\u202etxt';
const EVIL_SHOWN = 'evil\\x1b[2K\\u202Etxt';
/** True when text holds ESC or RIGHT-TO-LEFT OVERRIDE as is (not escaped). */
const hasRawControl = (text: string): boolean => text.includes('\u001b') || text.includes('\u202e');

/** A string that would pass for more JSON structure if its quotes were printed bare. */
const SPOOF = 'x", "approved_by": "root';

const S1 = 'a1b2c3d4-1111-4111-8111-111111111111';
const S2 = 'e5f6a7b8-2222-4222-8222-222222222222';
const REJ = 'c0ffee01-0000-4000-8000-000000000001';
const OK = 'c0ffee02-0000-4000-8000-000000000002';
const REPLAY = 'd00d0003-0000-4000-8000-000000000003';
const ERR = 'e0e00004-0000-4000-8000-000000000004';
const UNK = 'f00f0005-0000-4000-8000-000000000005';
const OPEN = 'abcabc06-0000-4000-8000-000000000006';

const sshTarget = { kind: 'ssh', host: 'preview.internal', port: 22, user: 'deploy', argv: ['/srv/deploy.sh', 'main', 'eu west'], host_key_fingerprint: 'SHA256:hostkey' } as const;

function call(over: Partial<CallRecord> & Pick<CallRecord, 'call_id' | 'tool'>): CallRecord {
  return {
    session_id: S1,
    run_id: 'run-7',
    agent_release: 'support-agent-2026.1',
    toolset_planned: 'cafe0123abcd',
    revision_seen: 1,
    revision_executed: 2,
    handler_revision: '0.1.0+sha256:cafe',
    raw_arguments: { branch: 'main' },
    normalized_arguments: { branch: 'main', region: 'eu-west' },
    adapter_applied: null,
    idempotency_key: null,
    args_digest: null,
    approval: null,
    decision_path: ['admit', 'resolve:current', 'validate'],
    side_effect_started: false,
    at: '2026-03-01T00:00:00.000Z',
    ...over,
  };
}

function seed(home: string): void {
  let t = Date.parse('2026-03-01T00:00:00.000Z');
  const j = openJournals(join(home, 'journal'), { clock: wallClock(() => new Date((t += 60_000))) });
  try {
    j.sessions.event(null, 'daemon_started', { version: '0.1.0' });
    j.sessions.startSession({ session_id: S1, transport: 'stdio-socket', client_name: EVIL, client_version: '2.0', protocol_version: '2025-11-25', peer_pid: 4242, peer_uid: null, run_id: 'run-7', agent_release: null });
    j.sessions.event(S1, 'tools_listed', { revisions: { deploy_preview: 2, create_issue: 1 } });
    j.activity.recordRejected({
      ...call({ call_id: REJ, tool: 'create_issue', raw_arguments: { title: EVIL, note: SPOOF }, normalized_arguments: null, revision_executed: null }),
      error_code: 'VALIDATION_FAILED',
      message: `title: ${EVIL} is too long`,
    });
    j.activity.recordIntent({
      ...call({
        call_id: OK,
        tool: 'deploy_preview',
        adapter_applied: 'deploy_preview@1->2',
        idempotency_key: 'deploy-main',
        args_digest: 'sha256:args1',
        approval: { mode: 'per-call', id: 'appr-1', decided_by: 'alice', decided_at: '2026-03-01T00:03:30.000Z', outcome: 'approved' },
        decision_path: ['admit', 'resolve:adapt', 'validate', 'normalize', 'idempotency', 'approve:per-call'],
      }),
      target: sshTarget,
    });
    j.activity.recordOutcome(OK, { status: 'success', side_effect_started: true, exit_code: 0, duration_ms: 812, result: { content: [{ type: 'text', text: 'deployed main' }] }, result_digest: 'sha256:result1' });
    j.sessions.endSession(S1, 'disconnected');
    j.sessions.startSession({ session_id: S2, transport: 'stdio-socket', client_name: 'codex', client_version: '1.0', protocol_version: '2025-11-25', peer_pid: 777, peer_uid: 1000, run_id: null, agent_release: null });
    j.activity.recordReplay({
      ...call({ call_id: REPLAY, session_id: S2, run_id: null, tool: 'deploy_preview', idempotency_key: 'deploy-main', args_digest: 'sha256:args1' }),
      replay_of: OK,
    });
    j.activity.recordIntent({
      ...call({ call_id: ERR, session_id: S2, run_id: null, tool: 'create_issue', revision_seen: 1, revision_executed: 1, approval: { mode: 'session', id: 'grant-3', decided_by: 'alice', decided_at: '2026-03-01T00:07:00.000Z', outcome: 'approved' } }),
      target: { kind: 'http', method: 'POST', url: 'https://api.example.com/issues' },
    });
    j.activity.recordOutcome(ERR, { status: 'error', side_effect_started: true, error_code: 'TARGET_ERROR', response_status: 502, connected_ip: '203.0.113.7', duration_ms: 95, result: { isError: true } });
    j.activity.recordIntent({ ...call({ call_id: UNK, session_id: S2, run_id: null, tool: 'deploy_preview', idempotency_key: 'deploy-eu', args_digest: 'sha256:args2' }), target: sshTarget });
    j.activity.recordOutcome(UNK, { status: 'outcome_unknown', side_effect_started: true, error_code: 'TARGET_TIMEOUT', duration_ms: 30_000 });
    j.activity.recordIntent({
      ...call({ call_id: OPEN, session_id: S2, run_id: null, tool: 'search_issues', revision_executed: 1 }),
      target: { kind: 'http', method: 'GET', url: `https://api.example.com/search?q=${EVIL}` },
    });
    j.sessions.event(null, 'lock', { reason: 'idle' });
    // As the daemon leaves it: an anchor of both heads beside the journal (its MAC is not checked without --unlock).
    const f = j.facts();
    const record = { format: ANCHOR_FORMAT, journal_id: f.activity.journal_id ?? '', counter: 1, activity: f.activity.head, sessions: f.sessions.head, vault_generation: 1, catalog_digest: '0'.repeat(64), at: '2026-03-01T00:00:00.000Z' } as const;
    writeAnchor(join(home, 'journal.anchor'), sealAnchor(randomBytes(32), record), true);
  } finally {
    j.close();
  }
}

describe('postern audit', () => {
  let sb: CliSandbox;
  const ok = async (args: string[]): Promise<CliResult> => {
    const r = await sb.run(['audit', ...args]);
    assert.equal(r.code, 0, `audit ${args.join(' ')} failed: ${r.stderr}`);
    assert.ok(!hasRawControl(r.stdout), `raw control characters reached the terminal: audit ${args.join(' ')}`);
    return r;
  };
  const json = async <T>(args: string[]): Promise<T> => JSON.parse((await ok([...args, '--json'])).stdout) as T;
  const ids = (calls: CallView[]): string[] => calls.map((c) => c.call.call_id);

  before(async () => {
    sb = await cliSandbox();
    seed(sb.home);
  });
  after(() => sb.cleanup());

  describe('without a journal', () => {
    let empty: CliSandbox;
    before(async () => {
      empty = await cliSandbox();
    });
    after(() => empty.cleanup());

    it('says so and exits 0 for list commands, verify and export', async () => {
      for (const cmd of [['sessions'], ['activity'], ['session', '--daemon']]) {
        const r = await empty.run(['audit', ...cmd]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^no journal yet in .*journal: the daemon creates it/);
      }
      const j = await empty.run(['audit', 'activity', '--json']);
      assert.equal(j.code, 0);
      assert.deepEqual(JSON.parse(j.stdout), []);
      const v = await empty.run(['audit', 'verify']);
      assert.equal(v.code, 0);
      assert.match(v.stdout, /nothing to verify/);
      const e = await empty.run(['audit', 'export']);
      assert.equal(e.code, 0);
      assert.equal(e.stdout, '');
      assert.match(e.stderr, /nothing to export/);
    });

    it('a missing journal file next to a present one is a finding, not an empty journal', async () => {
      const half = await cliSandbox();
      try {
        seed(half.home);
        await rm(join(half.home, 'journal', 'activity.db'));
        const r = await half.run(['audit', 'verify']);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^postern: JOURNAL_UNAVAILABLE: activity journal: .*activity\.db does not exist$/m);
      } finally {
        await half.cleanup();
      }
    });

    it('show names the call it cannot find', async () => {
      const r = await empty.run(['audit', 'show', 'c0ffee']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^postern: CALL_NOT_FOUND: no call c0ffee: no journal yet/);
    });
  });

  describe('sessions', () => {
    it('lists sessions newest first, client names escaped', async () => {
      const r = await ok(['sessions']);
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0] ?? '', /^STARTED\s+SESSION\s+CLIENT\s+TRANSPORT\s+PEER\s+RUN\s+ENDED$/);
      assert.match(lines[1] ?? '', /e5f6a7b8\s+codex 1\.0\s+stdio-socket\s+pid 777 uid 1000\s+-\s+-$/);
      assert.ok(lines[2]?.includes(`a1b2c3d4  ${EVIL_SHOWN} 2.0`), lines[2]);
      assert.match(lines[2] ?? '', /pid 4242\s+run-7\s+\S+ \(disconnected\)$/);
      assert.equal(lines.length, 3);
    });

    it('--json keeps the exact values; --since and --limit narrow', async () => {
      const all = await json<SessionRow[]>(['sessions']);
      assert.deepEqual(all.map((s) => s.session_id), [S2, S1]);
      assert.equal(all[1]?.client_name, EVIL);
      assert.equal(all[1]?.end_reason, 'disconnected');
      const since = await json<SessionRow[]>(['sessions', '--since', all[0]?.started_at ?? '']);
      assert.deepEqual(since.map((s) => s.session_id), [S2]);
      const one = await ok(['sessions', '--limit', '1']);
      assert.match(one.stdout, /e5f6a7b8/);
      assert.doesNotMatch(one.stdout, /a1b2c3d4/);
      assert.match(one.stdout, /the newest 1 are shown/);
    });

    it('refuses a bad --limit or --since as a usage error', async () => {
      const bad = [['--limit', '0'], ['--limit', 'ten'], ['--limit', '10001'], ['--since', 'yesterday'], ['--since', '2026-13-45'], ['--since', '2026-02-30']];
      const runs = await Promise.all(bad.map((args) => sb.run(['audit', 'sessions', ...args])));
      runs.forEach((r, i) => {
        assert.equal(r.code, 2, bad[i]?.join(' '));
        assert.match(r.stderr, /^postern: USAGE: --(limit|since) /);
      });
    });
  });

  describe('activity', () => {
    it('lists every call newest first with revisions, status, error, approval and target', async () => {
      const r = await ok(['activity']);
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0] ?? '', /^TIME\s+CALL\s+SESSION\s+TOOL\s+REV\s+STATUS\s+ERROR\s+APPROVAL\s+TARGET$/);
      assert.equal(lines.length, 7);
      const row = (id: string): string => lines.find((l) => l.split(/\s+/)[1] === id.slice(0, 8)) ?? assert.fail(`no row for ${id}`);
      assert.match(row(OPEN), /e5f6a7b8\s+search_issues\s+r1→r1\s+in_progress\s+-\s+-\s+GET https:\/\/api\.example\.com\/search\?q=evil\\x1b\[2K\\u202Etxt$/);
      assert.match(row(UNK), /deploy_preview\s+r1→r2\s+outcome_unknown\s+TARGET_TIMEOUT\s+-\s+ssh deploy@preview\.internal \/srv\/deploy\.sh main 'eu west'$/);
      assert.match(row(ERR), /create_issue\s+r1→r1\s+error\s+TARGET_ERROR\s+session\/approved\s+POST https:\/\/api\.example\.com\/issues$/);
      assert.match(row(REPLAY), /deploy_preview\s+r1→r2\s+replayed\s+-\s+-\s+replay of c0ffee02$/);
      assert.match(row(OK), /a1b2c3d4\s+deploy_preview\s+r1→r2\s+success\s+-\s+per-call\/approved\s+ssh deploy@/);
      assert.match(row(REJ), /create_issue\s+r1→-\s+rejected\s+VALIDATION_FAILED\s+-\s+-$/);
      assert.ok(lines.indexOf(row(OPEN)) < lines.indexOf(row(REJ)), 'newest first');
    });

    it('--json returns the full call views', async () => {
      const calls = await json<CallView[]>(['activity']);
      assert.deepEqual(ids(calls), [OPEN, UNK, ERR, REPLAY, OK, REJ]);
      const ok1 = calls.find((c) => c.call.call_id === OK);
      assert.equal(ok1?.call.approval?.decided_by, 'alice');
      assert.deepEqual(ok1?.outcome?.result, { content: [{ type: 'text', text: 'deployed main' }] });
      assert.deepEqual(calls.find((c) => c.call.call_id === REJ)?.call.raw_arguments, { title: EVIL, note: SPOOF });
    });

    it('filters by tool, session (full or prefix), key, error code, time and limit', async () => {
      const all = await json<CallView[]>(['activity']);
      const at = (id: string): string => all.find((c) => c.call.call_id === id)?.journaled_at ?? assert.fail(id);
      const cases: [string[], string[]][] = [
        [['--tool', 'create_issue'], [ERR, REJ]],
        [['--session', S1], [OK, REJ]],
        [['--session', 'e5f6'], [OPEN, UNK, ERR, REPLAY]],
        [['--key', 'deploy-main'], [REPLAY, OK]],
        [['--error', 'TARGET_ERROR'], [ERR]],
        [['--error', 'VALIDATION_FAILED'], [REJ]],
        [['--tool', 'deploy_preview', '--session', 'e5f6a7b8'], [UNK, REPLAY]],
        [['--since', at(REPLAY), '--until', at(UNK)], [ERR, REPLAY]],
        [['--since', at(REPLAY).slice(0, 16), '--until', at(UNK).replace('T', ' ').slice(0, 19)], [ERR, REPLAY]],
        [['--limit', '2'], [OPEN, UNK]],
        [['--tool', 'nope'], []],
      ];
      const got = await Promise.all(cases.map(([args]) => json<CallView[]>(['activity', ...args])));
      cases.forEach(([args, want], i) => assert.deepEqual(ids(got[i] ?? []), want, args.join(' ')));
      const [none, two] = await Promise.all([ok(['activity', '--tool', 'nope']), ok(['activity', '--limit', '2'])]);
      assert.match(none.stdout, /^no calls match$/m);
      assert.match(two.stdout, /the newest 2 are shown/);
    });

    it('refuses a bad --until as a usage error', async () => {
      const r = await sb.run(['audit', 'activity', '--until', 'soon']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^postern: USAGE: --until takes an ISO 8601 time/);
    });
  });

  describe('show', () => {
    const show = async (id: string): Promise<string> => (await ok(['show', id])).stdout;
    const field = (out: string, name: string): string => {
      const line = out.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? assert.fail(`no ${name} line in\n${out}`) : line.slice(name.length).trim();
    };

    it('a success: arguments raw and normalized, revisions, approval, target, outcome and result', async () => {
      const out = await show(OK);
      assert.equal(field(out, 'call'), OK);
      assert.equal(field(out, 'status'), 'success');
      assert.equal(field(out, 'session'), S1);
      assert.equal(field(out, 'run'), 'run-7');
      assert.equal(field(out, 'agent release'), 'support-agent-2026.1');
      assert.equal(field(out, 'revision'), 'seen r1, executed r2');
      assert.equal(field(out, 'toolset planned'), 'cafe0123abcd');
      assert.equal(field(out, 'handler revision'), '0.1.0+sha256:cafe');
      assert.equal(field(out, 'adapter'), 'deploy_preview@1->2');
      assert.equal(field(out, 'decision path'), 'admit → resolve:adapt → validate → normalize → idempotency → approve:per-call');
      assert.equal(field(out, 'idempotency key'), 'deploy-main');
      assert.equal(field(out, 'arguments digest'), 'sha256:args1');
      assert.equal(field(out, 'approval'), 'per-call: approved');
      assert.equal(field(out, '  by'), 'alice at 2026-03-01T00:03:30.000Z');
      assert.equal(field(out, '  approval id'), 'appr-1');
      assert.equal(field(out, 'side effect started'), 'yes (when first journaled: no)');
      assert.equal(field(out, 'target'), "ssh deploy@preview.internal /srv/deploy.sh main 'eu west'");
      assert.equal(field(out, '  argv[2]'), 'eu west');
      assert.equal(field(out, '  host key'), 'SHA256:hostkey');
      assert.match(field(out, 'outcome'), /^success at 2026-/);
      assert.equal(field(out, '  exit code'), '0');
      assert.equal(field(out, '  duration'), '812 ms');
      assert.equal(field(out, '  result digest'), 'sha256:result1');
      assert.equal(field(out, '  idempotency claim'), 'completed');
      assert.match(out, /raw arguments \(as received\):\n {2}\{\n {4}"branch": "main"\n {2}\}\n/);
      assert.match(out, /normalized arguments:\n {2}\{\n {4}"branch": "main",\n {4}"region": "eu-west"\n {2}\}\n/);
      assert.match(out, /result \(as returned to the agent\):\n[\s\S]*"text": "deployed main"/);
    });

    it('a rejection: the code, the message and the raw arguments, escaped', async () => {
      const out = await show(REJ);
      assert.equal(field(out, 'status'), 'rejected');
      assert.equal(field(out, 'rejected'), 'VALIDATION_FAILED');
      assert.equal(field(out, '  message'), `title: ${EVIL_SHOWN} is too long`);
      assert.equal(field(out, 'target'), '- (nothing was to run)');
      assert.equal(field(out, 'approval'), '- (none asked)');
      assert.ok(out.includes(`"title": "${EVIL_SHOWN}",`), out);
      assert.ok(out.includes('"note": "x\\", \\"approved_by\\": \\"root"'), out);
      assert.match(out, /normalized arguments:\n {2}null\n/);
    });

    it('a replay names the call whose result it returned', async () => {
      const out = await show(REPLAY);
      assert.equal(field(out, 'status'), 'replayed');
      assert.equal(field(out, 'replay of'), `${OK} (its result was returned; nothing was run again)`);
      assert.equal(field(out, 'session'), S2);
    });

    it('an error, an unknown outcome and a call still in progress', async () => {
      const err = await show(ERR);
      assert.equal(field(err, 'status'), 'error');
      assert.equal(field(err, '  error code'), 'TARGET_ERROR');
      assert.equal(field(err, '  response status'), '502');
      assert.equal(field(err, '  connected ip'), '203.0.113.7');
      assert.equal(field(err, 'target'), 'POST https://api.example.com/issues');
      assert.equal(field(err, 'approval'), 'session: approved');
      const unk = await show(UNK);
      assert.equal(field(unk, 'status'), 'outcome_unknown');
      assert.equal(field(unk, '  error code'), 'TARGET_TIMEOUT');
      assert.equal(field(unk, 'side effect started'), 'yes (when first journaled: no)');
      const open = await show(OPEN);
      assert.equal(field(open, 'status'), 'in_progress');
      assert.match(field(open, 'outcome'), /^- \(none journaled/);
      assert.equal(field(open, '  url'), `https://api.example.com/search?q=${EVIL_SHOWN}`);
    });

    it('takes a unique prefix, refuses an ambiguous one, reports an unknown id; --json is the call view', async () => {
      assert.equal(field(await show('d00d'), 'call'), REPLAY);
      const amb = await sb.run(['audit', 'show', 'c0ffee0']);
      assert.equal(amb.code, 2);
      assert.match(amb.stderr, /^postern: USAGE: 2 calls start with c0ffee0: give more of the id$/m);
      const none = await sb.run(['audit', 'show', `zz${EVIL}`]);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /^postern: CALL_NOT_FOUND: no call zzevil\\x1b\[2K\\u202Etxt in the journal/m);
      assert.ok(!hasRawControl(none.stderr));
      const v = await json<CallView>(['show', REJ]);
      assert.equal(v.status, 'rejected');
      assert.deepEqual(v.rejection, { error_code: 'VALIDATION_FAILED', message: `title: ${EVIL} is too long` });
    });
  });

  describe('session', () => {
    it('shows the session, its events and its calls', async () => {
      const out = (await ok(['session', 'a1b2'])).stdout;
      assert.match(out, new RegExp(`^session {15}${S1}$`, 'm'));
      assert.ok(out.includes(`client                ${EVIL_SHOWN} 2.0`), out);
      assert.match(out, /^peer {18}pid 4242, uid -$/m);
      assert.match(out, /^ended {17}2026-\S+ \(disconnected\)$/m);
      assert.match(out, /^events \(3\):$/m);
      assert.match(out, /session_started .*"client_name":"evil\\x1b\[2K\\u202Etxt"/);
      assert.match(out, /tools_listed\s+\{"revisions":\{"deploy_preview":2,"create_issue":1\}\}/);
      assert.match(out, /session_closed\s+\{"reason":"disconnected"\}/);
      assert.match(out, /^calls \(2, newest first\):$/m);
      assert.match(out, /c0ffee02\s+a1b2c3d4\s+deploy_preview/);
      assert.match(out, /c0ffee01\s+a1b2c3d4\s+create_issue/);
    });

    it('--json, an unknown session, and the daemon-wide events', async () => {
      const s = await json<{ session_id: string; events: SessionEventRow[]; calls: CallView[] }>(['session', S2]);
      assert.equal(s.session_id, S2);
      assert.deepEqual(s.events.map((e) => e.type), ['session_started']);
      assert.deepEqual(ids(s.calls), [OPEN, UNK, ERR, REPLAY]);
      const none = await sb.run(['audit', 'session', 'ffff']);
      assert.equal(none.code, 1);
      assert.match(none.stderr, /^postern: INPUT_INVALID: no session ffff/m);
      const usage = await sb.run(['audit', 'session']);
      assert.equal(usage.code, 2);
      const d = await ok(['session', '--daemon']);
      assert.match(d.stdout, /daemon_started\s+\{"version":"0\.1\.0"\}/);
      assert.match(d.stdout, /lock\s+\{"reason":"idle"\}/);
    });
  });

  describe('verify and export', () => {
    let reports: { sessions: ChainReport; activity: ChainReport };

    it('verify prints each head when intact', async () => {
      const r = await ok(['verify']);
      assert.match(r.stdout, /^sessions journal: ok, 6 entries, head seq 6 hash [0-9a-f]{64}$/m);
      assert.match(r.stdout, /^activity journal: ok, 9 entries, head seq 9 hash [0-9a-f]{64}$/m);
      reports = await json(['verify']);
      assert.equal(reports.sessions.ok && reports.activity.ok, true);
    });

    it('export writes every entry of both journals as tagged JSON lines', async () => {
      const r = await ok(['export']);
      const lines = r.stdout.trimEnd().split('\n');
      assert.equal(lines.length, 6 + 9);
      const parsed = lines.map((l) => JSON.parse(l) as { journal: string; seq: number; data: unknown });
      assert.deepEqual(parsed.map((p) => p.journal), [...Array<string>(6).fill('sessions'), ...Array<string>(9).fill('activity')]);
      assert.deepEqual(parsed.slice(6).map((p) => p.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.ok(lines.some((l) => l.includes('\\u202e')), 'the bidi control is escaped, not dropped');
      const rej = parsed.find((p) => JSON.stringify(p.data).includes(REJ));
      assert.deepEqual((rej?.data as { call: CallRecord }).call.raw_arguments, { title: EVIL, note: SPOOF });
    });

    it('export --out writes a new private file and will not overwrite one', async () => {
      const file = join(sb.dir, 'audit.jsonl');
      const r = await ok(['export', '--out', file]);
      assert.match(r.stdout, /^exported 6 sessions entries and 9 activity entries to /);
      assert.equal((await readFile(file, 'utf8')).trimEnd().split('\n').length, 15);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const again = await sb.run(['audit', 'export', '--out', file]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^postern: FILE_IO: not exported to .*audit\.jsonl: it already exists/);
    });

    it('nothing printed anywhere carried a raw escape sequence or bidi control', () => {
      assert.ok(sb.transcript.length > 40);
      for (const text of sb.transcript) assert.ok(!hasRawControl(text), text);
    });

    it('verify exits 1 naming the first broken seq after an edit', async () => {
      const all = await json<CallView[]>(['activity']);
      const seq = all.find((c) => c.call.call_id === ERR)?.seq ?? assert.fail('no seq');
      const db = new Database(join(sb.home, 'journal', 'activity.db'));
      try {
        db.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
        const changed = db.prepare(`UPDATE entries SET body = replace(body, 'api.example.com', 'evil.example.net') WHERE seq = ?`).run(seq);
        assert.equal(changed.changes, 1);
      } finally {
        db.close();
      }
      const r = await sb.run(['audit', 'verify']);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /^sessions journal: ok, 6 entries/m);
      assert.match(r.stdout, new RegExp(`^activity journal: BROKEN at seq ${seq}: the entry was edited \\(hash_mismatch\\); ${seq - 1} entries before it are intact$`, 'm'));
      const j = await sb.run(['audit', 'verify', '--json']);
      assert.equal(j.code, 1);
      const rep = JSON.parse(j.stdout) as { activity: ChainReport };
      assert.deepEqual(rep.activity, { ok: false, entries_checked: seq - 1, first_bad_seq: seq, reason: 'hash_mismatch' });
    });
  });
});
