/**
 * `postern approvals watch` against a real daemon: it authenticates once,
 * prints a card as soon as a real MCP client's call needs approval (the
 * agent-controlled title shown escaped), prints the resolution, and stops
 * cleanly on Ctrl-C. With --observe it still watches, and cannot decide.
 *
 * `postern approvals review` in a real pseudo-terminal: one passphrase prompt
 * for the whole review; approving a card not shown in full there is refused
 * APPROVAL_UNSEEN; `show N` then `a` approves under the seen rule and the
 * call reaches the target; `d reason` denies and the call never does; a card
 * that arrives during the review is announced; agent text reaches the
 * terminal escaped. Without a terminal it refuses, naming list/show/approve.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Client } from '@modelcontextprotocol/client';
import { childEnv, CLI } from '../helpers/cli.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { PASSPHRASE, type Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { startPty } from '../helpers/pty.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import type { CatalogPendingView } from '../../src/protocol/operator/index.js';

/** A running `postern approvals watch`, with its output as it arrives. */
interface Watch {
  readonly child: ChildProcess;
  out: string;
  err: string;
  /** Resolves once stdout matches (fails if the process exits first). */
  until(re: RegExp): Promise<void>;
  readonly exited: Promise<number | null>;
}

function startWatch(inst: Installation, extra: string[] = []): Watch {
  const child = spawn(process.execPath, [CLI, 'approvals', 'watch', ...extra, '--passphrase-file', inst.passFile], {
    env: childEnv(inst.sb.home),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const waiters: (() => void)[] = [];
  const w: Watch = {
    child,
    out: '',
    err: '',
    until: (re) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (re.test(w.out)) resolve();
          else if (child.exitCode !== null) reject(new Error(`watch exited ${child.exitCode} before ${re}: ${w.out}${w.err}`));
          else waiters.push(check);
        };
        check();
      }),
    exited: new Promise((resolve) => child.once('exit', (code) => {
      resolve(code);
      for (const f of waiters.splice(0)) f();
    })),
  };
  child.stdout?.on('data', (d: Buffer) => {
    w.out += d.toString('utf8');
    for (const f of waiters.splice(0)) f();
  });
  child.stderr?.on('data', (d: Buffer) => (w.err += d.toString('utf8')));
  return w;
}

describe('postern approvals watch', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;

  let catalog: { targets: Record<string, unknown>; tools: Record<string, unknown> };

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: canary('tok'),
      config: { approval_timeout_seconds: 60 },
      catalog: (targets) =>
        (catalog = {
          targets,
          tools: {
        create_issue: {
          description: 'Create an issue.',
          effect: 'write',
          approval: 'per-call',
              revisions: [{ revision: 1, input: { type: 'object', properties: { title: { type: 'string', maxLength: 200 } }, required: ['title'] }, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }],
            },
          },
        }),
    }));
    agent = await inst.client({ name: 'watch-agent' });
    events = await watchEvents(() => inst.operator());
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  it('prints the card when the call arrives and the decision when it is made; Ctrl-C ends it cleanly', async () => {
    const w = startWatch(inst);
    await w.until(/watching for approvals as operator \(0 pending/);
    const call = agent.callTool({ name: 'create_issue', arguments: { title: 'fix \u001b[2Kthe\u202E bug', idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
    const { card } = await events.next('approval.added');
    await w.until(new RegExp(`waiting for approval: ${card.id.slice(0, 8)} create_issue[^]*decide: postern approvals approve ${card.id.slice(0, 8)}`));
    assert.match(w.out, /target {8}POST http:\/\/127\.0\.0\.1:\d+\/echo/);
    assert.match(w.out, /session {7}watch-agent 1\.0\.0 pid \d+/);
    // JSON already wrote ESC as the six characters \u001b (their backslash doubled by the sanitizer); RLO is escaped by it.
    assert.ok(w.out.includes('fix \\\\u001b[2Kthe\\u202E bug'), w.out);
    assert.ok(!w.out.includes('\u001b') && !w.out.includes('\u202E'), 'nothing the agent sent reaches the terminal raw');
    const op = await inst.operator();
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once', call_digest: card.call_digest } });
    op.close();
    await w.until(new RegExp(`--- approved ${card.id.slice(0, 8)} \\(create_issue\\) once, by operator-cli`));
    const r = (await call) as { isError?: boolean };
    assert.equal(r.isError, undefined);
    w.child.kill('SIGINT');
    assert.equal(await w.exited, 0, w.err);
    assert.equal((w.out.match(/waiting for approval/g) ?? []).length, 1);
  });

  it('--observe watches as an observer; a card that times out or is denied is printed as such', async () => {
    const w = startWatch(inst, ['--observe']);
    await w.until(/watching for approvals as observer/);
    const call = agent.callTool({ name: 'create_issue', arguments: { title: 'second', idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
    const { card } = await events.next('approval.added');
    await w.until(new RegExp(`waiting for approval: ${card.id.slice(0, 8)}`));
    const op = await inst.operator();
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'deny', reason: 'not today' } });
    op.close();
    await w.until(/--- denied .* by operator-cli: not today/);
    assert.equal(((await call) as { isError?: boolean }).isError, true);
    w.child.kill('SIGINT');
    assert.equal(await w.exited, 0, w.err);
  });

  const call = (title: string): Promise<{ isError?: boolean }> => agent.callTool({ name: 'create_issue', arguments: { title, idempotency_key: `k-${randomBytes(6).toString('hex')}` } });
  const reached = (word: string): boolean => http.log().some((r) => r.body.toString('utf8').includes(word));

  it('approvals review: one unlock decides two cards: unseen approval refused, shown one approved, one denied, a new one announced', async () => {
    const first = call('alpha \u001b[2Kfix\u202E');
    const a = (await events.next('approval.added')).card;
    const second = call('bravo');
    const b = (await events.next('approval.added')).card;

    const pty = startPty(inst.sb.home, ['approvals', 'review']);
    try {
      await pty.until(/Vault passphrase: /);
      pty.type(`${PASSPHRASE}\n`);
      await pty.until(/reviewing approvals \(2 pending\)[^]*review> /);
      assert.match(pty.screen(), new RegExp(`\\n1 +${a.id.slice(0, 8)} +create_issue`));
      assert.match(pty.screen(), new RegExp(`\\n2 +${b.id.slice(0, 8)} +create_issue`));

      let from = pty.screen().length;
      pty.type('a 1\n');
      await pty.until(/APPROVAL_UNSEEN: card 1 was not shown in full/, from);
      assert.equal((await inst.sb.run(['approvals', 'list', '--json', '--passphrase-file', inst.passFile])).stdout.includes(a.id), true, 'nothing was approved');

      from = pty.screen().length;
      pty.type('show 1\n');
      await pty.until(/presentation {2}sha256 [0-9a-f]{64}[^]*decide: a \(approve once\)/, from);
      // The agent's ESC came as JSON's six characters \u001b (their backslash doubled by the escaping); RLO is escaped.
      assert.ok(pty.screen().includes('alpha \\\\u001b[2Kfix\\u202E'), pty.screen());
      from = pty.screen().length;
      pty.type('a\n');
      await pty.until(new RegExp(`approved ${a.id.slice(0, 8)} \\(create_issue\\) once, by operator-cli`), from);
      assert.equal((await first).isError, undefined);
      assert.ok(reached('alpha'), 'the approved call reached the target');

      from = pty.screen().length;
      const third = call('charlie');
      const c = (await events.next('approval.added')).card;
      await pty.until(new RegExp(`--- new card 3: ${c.id.slice(0, 8)} create_issue: \`show 3\``), from);

      from = pty.screen().length;
      pty.type('show 2\n');
      await pty.until(/decide: a \(approve once\)/, from);
      pty.type('d not today\n');
      await pty.until(new RegExp(`denied ${b.id.slice(0, 8)} \\(create_issue\\), by operator-cli: not today`), from);
      assert.equal((await second).isError, true);
      from = pty.screen().length;
      pty.type('d 3\n');
      await pty.until(new RegExp(`denied ${c.id.slice(0, 8)} `), from);
      assert.equal((await third).isError, true);
      assert.ok(!reached('bravo') && !reached('charlie'), 'no denied call reached the target');

      pty.type('q\n');
      assert.equal(await pty.exited, 0, pty.screen());
      assert.equal((pty.screen().match(/Vault passphrase:/g) ?? []).length, 1, 'one passphrase prompt for the whole review');
      assert.ok(!pty.screen().includes('\u001b[2K') && !pty.screen().includes('\u202E'), 'nothing the agent sent reaches the terminal raw');
    } finally {
      pty.kill();
    }
  });

  it('approvals review without a terminal refuses, naming list/show/approve, and asks for nothing', async () => {
    const r = await inst.sb.run(['approvals', 'review', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^postern: USAGE: `approvals review` needs an interactive terminal: without one, use `postern approvals list`, `show ID` and `approve ID --digest PREFIX`/);
  });

  it('an edited catalog.yaml is announced as pending with its classified diff, and cleared once accepted', async () => {
    const wider = { ...catalog, tools: { ...catalog.tools, delete_all: { description: 'Delete.', effect: 'destructive', approval: 'per-call', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'DELETE', path: '/all' } }] } } };
    await writeFile(join(inst.sb.home, 'catalog.yaml'), stringify(wider));
    // A watcher may see the file half-written first (pending, invalid); the whole file follows.
    const p = await events.next('catalog.pending', (e) => e.pending !== null && e.pending.invalid === null);
    assert.ok(p.pending !== null);
    assert.equal(p.pending.tools, 2);
    assert.equal(p.pending.widening, true);
    assert.ok(p.pending.changes.some((c) => c.tool === 'delete_all' && c.class === 'authority_widening'), JSON.stringify(p.pending.changes));
    const op = await inst.operator();
    assert.equal((await op.request('status', {})).catalog_pending, true);
    assert.equal((await op.request('catalog.pending', {}))?.digest, p.pending.digest);
    op.close();
    await inst.acceptCatalog(wider);
    await events.next('catalog.adopted', (e) => e.catalog.tools === 2);
    await events.next('catalog.pending', (e) => e.pending === null);
  });
  it('catalog.accept over the operator channel adopts exactly the reviewed file; a failing gate accepts nothing; catalog.reject sets the edit aside', async () => {
    const deleteAll = { description: 'Delete.', effect: 'destructive', approval: 'per-call', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'DELETE', path: '/all' } }] };
    const listItems = { description: 'List items.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'GET', path: '/echo' } }] };
    const next = { ...catalog, tools: { ...catalog.tools, delete_all: deleteAll, list_items: listItems } };
    const home = inst.sb.home;
    const pendingWhere = (pred: (v: CatalogPendingView) => boolean, what: string) =>
      events.next('catalog.pending', (e) => e.pending !== null && e.pending.invalid === null && pred(e.pending)).then((e) => e.pending!, (err: Error) => {
        throw new Error(`${what}: ${err.message}: ${JSON.stringify(events.events.filter((x) => x.event.type === 'catalog.pending').slice(-2))}`);
      });
    await writeFile(join(home, 'catalog.yaml'), stringify(next));
    const p = { pending: await pendingWhere((v) => v.tools === 3, 'the three-tool catalog') };
    const op = await inst.operator();
    try {
      await assert.rejects(op.request('catalog.accept', { digest: 'f'.repeat(64) }), (e: Error & { code?: string }) => e.code === 'CATALOG_PENDING');
      const r = await op.request('catalog.accept', { digest: p.pending.digest });
      assert.equal(r.accepted.digest, p.pending.digest);
      assert.equal(r.accepted.tools, 3);
      await events.next('catalog.pending', (e) => e.pending === null);
      const tools = await agent.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'list_items'), 'the agent sees the accepted tool');

      // The same revision sent somewhere else: the release gate refuses it, nothing changes.
      const broken = { ...next, tools: { ...next.tools, list_items: { ...listItems, revisions: [{ ...listItems.revisions[0], http: { target: 'local', method: 'GET', path: '/elsewhere' } }] } } };
      await writeFile(join(home, 'catalog.yaml'), stringify(broken));
      const b = { pending: await pendingWhere((v) => v.digest !== p.pending.digest, 'the broken catalog') };
      await assert.rejects(op.request('catalog.accept', { digest: b.pending.digest }), (e: Error & { code?: string }) => e.code === 'RELEASE_GATE_FAILED' && !/report above/.test(e.message));
      assert.equal((await op.request('status', {})).catalog.digest, p.pending.digest, 'the catalog in use is unchanged');

      const r2 = await op.request('catalog.reject', { digest: b.pending.digest });
      assert.equal(r2.rejected, b.pending.digest);
      await events.next('catalog.pending', (e) => e.pending === null);
      assert.equal(readFileSync(join(home, 'catalog.yaml'), 'utf8'), readFileSync(join(home, 'catalog.accepted.yaml'), 'utf8'));
      assert.equal(readFileSync(join(home, `catalog.rejected-${b.pending.digest.slice(0, 16)}.yaml`), 'utf8'), stringify(broken));
      const audit = await inst.sb.run(['audit', 'session', '--daemon', '--json']);
      assert.ok((JSON.parse(audit.stdout) as { type: string }[]).some((e) => e.type === 'catalog_rejected'), audit.stdout);
    } finally {
      op.close();
    }
  });
});
