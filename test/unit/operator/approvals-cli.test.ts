/**
 * `postern approvals …` in process, against a real operator server: ids by
 * unique prefix, approvals bound to the card's digest, and nothing from a card
 * reaches the terminal unescaped (THREATS row 3).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { registerApprovals, resolveCard, targetSummary } from '../../../src/cli/commands/approvals.js';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';
import { presentation } from '../../../src/protocol/operator/index.js';
import { assertInert, draft, rejectsWith, startHarness, tempRun, type Harness } from './helpers.js';
import { PIPED_COLUMNS } from '../../helpers/cli.js';
import { CONTINUATION, cellWidth } from '../../../src/rules/terminal-text.js';

interface Cli {
  /** `columns`: the pager's width (COLUMNS); a wide one unless a test reads the fold. */
  run(args: string[], columns?: string): Promise<string>;
  keyRequests: number;
}

async function cliFor(t: Parameters<typeof startHarness>[0], withDaemon = true): Promise<{ h: Harness | null; cli: Cli }> {
  const { dir } = tempRun(t);
  const home = join(dir, 'home');
  mkdirSync(join(home, 'run'), { recursive: true, mode: 0o700 });
  const h = withDaemon ? await startHarness(t, { socket: join(home, 'run', 'operator.sock') }) : null;
  const cli: Cli = {
    keyRequests: 0,
    async run(args, columns = PIPED_COLUMNS) {
      const program = new Command().exitOverride();
      registerApprovals(program, {
        operatorKey: () => {
          cli.keyRequests++;
          return Promise.resolve(Uint8Array.from(h?.key ?? new Uint8Array(32)));
        },
      });
      for (const c of program.commands) c.exitOverride();
      const out: string[] = [];
      const write = process.stdout.write.bind(process.stdout);
      const oldHome = process.env['POSTERN_HOME'];
      const oldColumns = process.env['COLUMNS'];
      process.env['POSTERN_HOME'] = home;
      // A wide pager, as the CLI's children get (test/helpers/cli.ts): the table is read whole.
      process.env['COLUMNS'] = columns;
      process.stdout.write = (s: string | Uint8Array) => (out.push(String(s)), true);
      try {
        await program.parseAsync(args, { from: 'user' });
      } finally {
        process.stdout.write = write;
        if (oldHome === undefined) delete process.env['POSTERN_HOME'];
        else process.env['POSTERN_HOME'] = oldHome;
        if (oldColumns === undefined) delete process.env['COLUMNS'];
        else process.env['COLUMNS'] = oldColumns;
      }
      return out.join('');
    },
  };
  return { h, cli };
}

const hostile = draft({
  tool: 'deploy\u001b[2K\rsafe_read',
  session: { id: 's9', client_name: 'agent\u202Etxt', client_version: null, pid: 7 },
  widening: ['adds host evil.example'],
  scope_allowed: 'per-call',
  target: { kind: 'ssh', host: 'prod.example', port: 22, user: 'deploy', argv: ['sh', '-c', `${' '.repeat(10_000)}rm -rf ~`], command: 'sh', host_key: null },
  credential: 'key\u200B',
  call_digest: 'sha256:aaaaaaaaaaaaaaaaaaaa',
});


describe('postern approvals', () => {
  it('list prints a sanitized table with the WIDENS flag and folded long values', async (t) => {
    const { h, cli } = await cliFor(t);
    h!.queue.request(hostile, { timeoutMs: 60_000 });
    t.after(() => h!.queue.voidAll('test over'));
    const out = await cli.run(['approvals', 'list']);
    assertInert(out, true);
    assert.match(out, /^ID\s+TOOL\s+REV\s+CLIENT\s+TARGET\s+CREDENTIAL\s+AGE\s+FLAGS/);
    assert.match(out, /deploy\\x1b\[2K\\rsafe_read/);
    assert.match(out, /agent\\u202Etxt pid 7/);
    assert.match(out, /ssh deploy@prod\.example sh -c/);
    assert.match(out, /\+\d+ more/);
    assert.match(out, /key\\u200B/);
    assert.match(out, /WIDENS/);
    const json = await cli.run(['approvals', 'list', '--json']);
    assertInert(json, true);
    assert.equal(JSON.parse(json)[0].tool, hostile.tool);
  });

  it('approve by unique prefix, with the presentation digest `show` printed, binds the card digest and resolves the waiting call once', async (t) => {
    const { h, cli } = await cliFor(t);
    const a = h!.queue.request(draft(), { timeoutMs: 60_000 });
    const shown = await cli.run(['approvals', 'show', a.card.id.slice(0, 6)]);
    const digest = /presentation {2}sha256 ([0-9a-f]{64})/.exec(shown)?.[1] ?? '';
    assert.equal(digest, presentation(a.card).digest);
    await rejectsWith(cli.run(['approvals', 'approve', a.card.id.slice(0, 6)]), 'USAGE', /approve needs --digest/);
    const out = await cli.run(['approvals', 'approve', a.card.id.slice(0, 6), '--digest', digest.slice(0, 8)]);
    assert.match(out, /^approved [0-9a-f]{8} \(create_issue\) once, by operator-cli\n$/);
    const d = await a.decision;
    assert.equal(d.kind === 'approved' && d.scope, 'once');
  });

  it('show at 80 columns: a run of lone Hangul jamo is shown escaped and folded; no row is wider, none begins with agent text', async (t) => {
    const { h, cli } = await cliFor(t);
    const jamo = '\u1100'.repeat(40);
    const a = h!.queue.request(draft({ raw_arguments: { title: jamo }, normalized_arguments: { title: jamo } }), { timeoutMs: 60_000 });
    t.after(() => h!.queue.voidAll('test over'));
    const rows = (await cli.run(['approvals', 'show', a.card.id.slice(0, 6)], '80')).split('\n').slice(0, -1);
    assert.ok(!rows.join('').includes('\u1100'), 'no raw jamo');
    assert.ok(rows.join('').includes('\\u1100'), 'shown as \\u1100');
    for (const r of rows) {
      assert.ok(cellWidth(r) <= 79, `${cellWidth(r)} cells: ${r}`);
      assert.ok(r.startsWith(CONTINUATION) || /^[a-z][a-z ]*[a-z]( {2,}|:)|^approve with|^\(values/.test(r), `a row Postern did not begin: ${r}`);
    }
  });

  it('approve with a digest that is not the presentation\'s is APPROVAL_UNSEEN; an unknown id APPROVAL_NOT_FOUND', async (t) => {
    const { h, cli } = await cliFor(t);
    const a = h!.queue.request(draft(), { timeoutMs: 60_000 });
    t.after(() => h!.queue.voidAll('test over'));
    await rejectsWith(cli.run(['approvals', 'approve', a.card.id, '--digest', 'sha256:bbbbbbbbbbbbbbbb']), 'APPROVAL_UNSEEN');
    await rejectsWith(cli.run(['approvals', 'approve', a.card.id, '--digest', a.card.call_digest]), 'APPROVAL_UNSEEN');
    await rejectsWith(cli.run(['approvals', 'approve', a.card.id, '--digest', presentation(a.card).digest.slice(0, 7)]), 'APPROVAL_UNSEEN');
    await rejectsWith(cli.run(['approvals', 'deny', 'ffffffff-0000']), 'APPROVAL_NOT_FOUND');
    assert.equal(h!.queue.list().length, 1);
  });

  it('a card no longer pending: APPROVAL_NOT_FOUND says it was decided or expired, by prefix too', async (t) => {
    const { h, cli } = await cliFor(t);
    const a = h!.queue.request(draft(), { timeoutMs: 60_000 });
    h!.queue.decide(a.card.id, { verdict: 'deny', reason: null }, 'op');
    await rejectsWith(cli.run(['approvals', 'deny', a.card.id.slice(0, 8)]), 'APPROVAL_NOT_FOUND', /already denied/);
    const b = h!.queue.request(draft(), { timeoutMs: 10 });
    await b.decision;
    await rejectsWith(cli.run(['approvals', 'show', b.card.id]), 'APPROVAL_NOT_FOUND', /expired at /);
    await rejectsWith(cli.run(['approvals', 'deny', 'ffffffff-0000']), 'APPROVAL_NOT_FOUND', /knows no approval with that id/);
  });

  it('a session grant is refused for a card that cannot be shown in full', async (t) => {
    const { h, cli } = await cliFor(t);
    const a = h!.queue.request({ ...hostile, scope_allowed: 'session', widening: [] }, { timeoutMs: 60_000 });
    t.after(() => h!.queue.voidAll('test over'));
    await rejectsWith(cli.run(['approvals', 'approve', a.card.id, '--session', '--digest', presentation(a.card).digest]), 'USAGE', /too long to show in full/);
    const shown = await cli.run(['approvals', 'show', a.card.id]);
    assertInert(shown, true);
    assert.match(shown, /shown whole above: this call can only be approved once/);
    assert.ok(shown.includes('rm -rf ~'), 'show prints the whole card, the end of the long argv too');
    assert.equal(h!.queue.list().length, 1);
  });

  it('deny passes the reason to the waiting call', async (t) => {
    const { h, cli } = await cliFor(t);
    const a = h!.queue.request(draft(), { timeoutMs: 60_000 });
    const out = await cli.run(['approvals', 'deny', a.card.id, '--reason', 'wrong repo']);
    assert.match(out, /^denied .* by operator-cli: wrong repo\n$/);
    const d = await a.decision;
    assert.equal(d.kind === 'denied' && d.reason, 'wrong repo');
  });

  it('without a daemon it says so before asking for the passphrase', async (t) => {
    const { cli } = await cliFor(t, false);
    const e = await rejectsWith(cli.run(['approvals', 'list']), 'DAEMON_UNAVAILABLE');
    assert.match(e.message, /start it with `postern daemon`/);
    assert.equal(cli.keyRequests, 0);
  });

  it('an ambiguous prefix is refused; summaries name the parsed target', () => {
    const card = (id: string): ApprovalCard => ({ ...draft(), annotations: null, limits: [], id, requested_at: 'x', expires_at: 'y' });
    const cards = [card('abc-1'), card('abc-2'), card('abd-3')];
    assert.throws(() => resolveCard(cards, 'abc'), /2 pending approvals start with abc/);
    assert.equal(resolveCard(cards, 'abd').id, 'abd-3');
    assert.equal(resolveCard(cards, 'abc-1').id, 'abc-1');
    assert.equal(targetSummary(cards[0]!), 'POST https://api.example.com/repos/a/b/issues');
  });
});
