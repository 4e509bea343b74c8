/**
 * `postern up` in a real terminal (tmux): one unlock, the daemon core in a
 * worker thread, the TUI on the private port. A real MCP client's calls are
 * approved and denied with keys, two pending calls decided out of order each
 * get their own decision, the target sees exactly the approved requests, and
 * quitting locks the vault and stops the daemon (the agent then gets
 * DAEMON_UNAVAILABLE). The decisions are in the journal afterwards.
 */
import { after, before, describe, it } from 'node:test';
import { TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE } from '../../src/vault/index.js';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { CLI } from '../helpers/cli.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { waitFor } from '../helpers/wait.js';
import { FORGED, UNSETTLED, foreignStart } from '../unit/tui/own-rows.js';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
if (!hasTmux && process.env['CI'] === 'true') throw new Error('tmux is required in CI (.ci/run installs it)');

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('postern up in tmux', { skip: hasTmux ? false : 'tmux is not installed' }, () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;
  let sock: string;
  let exitFile: string;
  const tmux = (...args: string[]): string => execFileSync('tmux', ['-S', sock, ...args], { encoding: 'utf8' });
  const screen = (): string => tmux('capture-pane', '-p', '-t', 'up');
  /** Waits for the screen to show `re` (polls the pane: the terminal is the event source). */
  const until = async (re: RegExp, what: string): Promise<string> => {
    let s = '';
    await waitFor(
      () => {
        s = existsSync(exitFile) ? '' : screen();
        if (re.test(s)) return true;
        if (existsSync(exitFile)) throw new Error(`postern up exited (${readFileSync(exitFile, 'utf8').trim()}) before ${what}`);
        return false;
      },
      () => `the screen to show ${what}:\n${screen()}`,
      { timeoutMs: 60_000, everyMs: 50 },
    );
    return s;
  };
  const key = (k: string): void => void tmux('send-keys', '-t', 'up', k);
  const call = (title: string): Promise<Result> => agent.callTool({ name: 'create_issue', arguments: { title, idempotency_key: `k-${randomBytes(6).toString('hex')}` } }) as Promise<Result>;
  const posted = (): string[] => http.requests.filter((r) => r.method === 'POST').map((r) => (JSON.parse(r.body.toString('utf8')) as { title: string }).title);

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), config: { approval_timeout_seconds: 120 }, tools: {
        create_issue: {
          description: 'Create an issue.',
          effect: 'write',
          approval: 'per-call',
          revisions: [{ revision: 1, input: { type: 'object', properties: { title: { type: 'string', maxLength: 200 } }, required: ['title'] }, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }],
        },
      }, start: false }));
    sock = join(inst.sb.dir, 'tmux.sock');
    exitFile = join(inst.sb.dir, 'up.exit');
    const cmd = `env -i PATH="$PATH" TERM=xterm-256color POSTERN_HOME='${inst.sb.home}' ${TEST_KDF_SWITCH}=${TEST_KDF_SWITCH_VALUE} '${process.execPath}' '${CLI}' --passphrase-file '${inst.passFile}' up; echo $? > '${exitFile}'`;
    tmux('new-session', '-d', '-s', 'up', '-x', '100', '-y', '30', 'sh', '-c', cmd);
    await until(/Approvals \(0\)/, 'the TUI');
    agent = await inst.client({ name: 'tmux-agent' });
    events = await watchEvents(() => inst.operator());
  });

  after(async () => {
    events?.close();
    try {
      tmux('kill-server');
    } catch {
      // already gone
    }
    await inst.cleanup();
    await http.close();
  });

  it('approves with a key, denies with a key, and decides two pending calls out of order', async () => {
    const first = call('first-title');
    await events.next('approval.added');
    // Deciding keys act once the decision pause after a card appears has passed: the key bar shows them then.
    await until(/first-title[^]*a approve once/, 'the first card, its keys live');
    key('a');
    assert.equal((await first).isError, undefined);
    assert.deepEqual(posted(), ['first-title']);

    const second = call('second-title');
    await events.next('approval.added');
    await until(/second-title[^]*d deny/, 'the second card, its keys live');
    key('d');
    const denied = await second;
    assert.equal(denied.isError, true);
    assert.equal(denied.structuredContent?.['side_effect_started'], false);
    assert.deepEqual(posted(), ['first-title']);

    const third = call('third-title');
    await events.next('approval.added');
    await until(/third-title/, 'the third card');
    const fourth = call('fourth-title');
    await events.next('approval.added');
    await until(/1 of 2/, 'two cards in the queue');
    assert.match(screen(), /third-title/, 'the card on screen stays when another arrives');
    key('n');
    await until(/2 of 2[^]*fourth-title[^]*a approve once/, 'the fourth card, its keys live');
    key('a');
    assert.equal((await fourth).isError, undefined);
    await until(/third-title[^]*d deny/, 'the third card again, its keys live');
    key('d');
    assert.equal((await third).isError, true);
    assert.deepEqual(posted(), ['first-title', 'fourth-title']);
  });

  it('graphemes of unsettled width: no pane row begins with agent text, the header and countdown stay; approvals show folds them too', async () => {
    const title = `${UNSETTLED.join('')}${FORGED}${UNSETTLED.join('')}`.slice(0, 190);
    const pending = call(title);
    const added = await events.next('approval.added');
    const pane = await until(/arg sizes {3}title 1\d\d chars[^]*d deny/, 'the card of unsettled width, its keys live');
    const rows = pane.split('\n');
    assert.match(rows[0] ?? '', /^Postern {2}1 Approvals \(1\)/, pane);
    // Under the header: the test vault's badge row, then the queue line and the countdown.
    const queueRow = rows.findIndex((r) => /^Approval 1 of 1 · /.test(r));
    assert.ok(queueRow === 1 || queueRow === 2, pane);
    assert.match(rows[queueRow + 1] ?? '', /^expires in \d/, pane);
    assert.deepEqual(rows.map(foreignStart).filter((r) => r !== null), [], pane);

    // The CLI in a 60-column pane, and piped (folded at 100 columns less the margin, with the mark).
    const id = added.card.id;
    const show = `env -i PATH="$PATH" TERM=xterm-256color POSTERN_HOME='${inst.sb.home}' ${TEST_KDF_SWITCH}=${TEST_KDF_SWITCH_VALUE} '${process.execPath}' '${CLI}' --passphrase-file '${inst.passFile}' approvals show ${id}`;
    const done = join(inst.sb.dir, 'show.done');
    tmux('new-window', '-d', '-t', 'up', '-n', 'show', 'sh', '-c', `${show}; touch '${done}'; sleep 600`);
    tmux('resize-window', '-t', 'up:show', '-x', '60', '-y', '40');
    await waitFor(() => existsSync(done), () => 'approvals show to finish', { timeoutMs: 60_000, everyMs: 50 });
    const shown = tmux('capture-pane', '-p', '-t', 'up:show').split('\n').filter((r) => r.trim() !== '');
    assert.ok(shown.some((r) => r.startsWith('body ')), shown.join('\n'));
    for (const r of shown) assert.match(r, /^([a-z][a-z0-9 [\]]{0,13}( |$)|\u2506 |\(\d+ characters not shown)/, `a stray row in approvals show:\n${shown.join('\n')}`);
    tmux('kill-window', '-t', 'up:show');
    const piped = await inst.sb.run(['--passphrase-file', inst.passFile, 'approvals', 'show', id], { env: { COLUMNS: '100' } });
    assert.equal(piped.code, 0, piped.stderr);
    const lines = piped.stdout.trimEnd().split('\n');
    assert.ok(lines.some((l) => l.startsWith('\u2506 ')), 'a long value is folded behind the mark');
    for (const l of lines) assert.match(l, /^([a-z][a-z0-9 [\]]{0,13}( |$)|\u2506 |\(\d+ characters not shown)/, l);

    key('d');
    assert.equal((await pending).isError, true);
  });

  it('q quits: the vault is locked and the daemon stopped; the journal holds the decisions', async () => {
    await until(/Approvals \(0\)[^]*No calls are waiting/, 'an empty queue');
    key('q');
    // The shell writes the exit file when postern up ends.
    await waitFor(() => existsSync(exitFile), () => `postern up to exit after q:\n${screen()}`, { timeoutMs: 60_000, everyMs: 50 });
    assert.equal(readFileSync(exitFile, 'utf8').trim(), '0');
    const r = await call('after-quit');
    assert.equal(r.structuredContent?.['error_code'], 'DAEMON_UNAVAILABLE');
    const log = readFileSync(join(inst.sb.home, 'run', 'up.log'), 'utf8');
    assert.match(log, /stopped|stopping|lock/i);
    const audit = await inst.sb.run(['audit', 'activity', '--json']);
    assert.equal(audit.code, 0, audit.stderr);
    const text = audit.stdout;
    for (const t of ['first-title', 'second-title', 'third-title', 'fourth-title']) assert.ok(text.includes(t), `${t} is in the journal`);
    assert.deepEqual(posted(), ['first-title', 'fourth-title']);
  });
});
