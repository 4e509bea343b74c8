/**
 * An unattended run end to end: the real daemon started with `--unattended`,
 * the official MCP client over real stdio (`postern mcp`), and a loopback
 * HTTP service with an append-only request log. Nobody approves anything: a
 * call a pre-approval rule covers runs at once, anything else is refused
 * APPROVAL_UNAVAILABLE at once with nothing sent, a widening revision is
 * refused even with a matching rule, a budget runs out, and the run report
 * (`postern approvals report`, then run-report.json at a clean stop) says so.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import type { RunReport } from '../../src/protocol/operator/index.js';

const TOKEN = canary('tok');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required, additionalProperties: false });
const text = { type: 'string', maxLength: 100 };

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

function catalogFor(origin: string) {
  const r1 = { revision: 1, input: obj({ title: text }, ['title']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } };
  return {
    targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
    tools: {
      create_note: {
        description: 'Create a note.',
        effect: 'write',
        approval: 'per-call',
        revisions: [{ revision: 1, input: obj({ title: text, project: { enum: ['web', 'api', 'docs'] }, priority: { type: 'integer', minimum: 0, maximum: 9 } }, ['title', 'project', 'priority']), http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}', project: '{project}', priority: '{priority}' } } }],
      },
      read_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}, []), http: { target: 'local', method: 'GET', path: '/json' } }] },
      // Revision 2 reaches a method revision 1 could not: a session planned against 1 needs a fresh approval.
      post_thing: {
        description: 'Post a thing.',
        effect: 'write',
        approval: 'session',
        revisions: [r1, { ...r1, revision: 2, http: { ...r1.http, method: 'PUT' }, previous: { policy: 'adapt' } }],
      },
    },
    preapprovals: {
      ci_notes: { tool: 'create_note', budget: 2, arguments: { title: { pattern: 'ci-[0-9]{1,6}' }, project: { one_of: ['web', 'api'] }, priority: { max: 3 } } },
      // Accepted for revision 2 (PUT), the one that runs: a rule covers only the authority it was accepted for.
      things: { tool: 'post_thing', budget: 10, revision: 2, arguments: { title: { pattern: '[a-z-]+' } } },
    },
  };
}

describe('daemon --unattended: pre-approval rules decide, nobody waits', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;

  before(async () => {
    // A long approval timeout: a call that waited for a person would hang the test, not pass it.
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      config: { approval_timeout_seconds: 600, approval_wait_without_progress_seconds: 600 },
      catalog: (_targets, target) => catalogFor(target.origin),
      start: ['--unattended'],
    }));
    agent = await inst.client();
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const call = async (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<Result> =>
    (await agent.callTool({ name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) })) as Result;
  const facts = (r: Result): Record<string, unknown> => r.structuredContent ?? {};

  async function report(): Promise<RunReport> {
    const op = await inst.operator();
    try {
      return await op.request('approvals.report', {});
    } finally {
      op.close();
    }
  }

  it('says at start that it runs unattended', () => {
    assert.match(inst.daemonLog, /unattended: no operator approves; 2 pre-approval rules decide/);
  });

  let coveredCallId: unknown;
  it('runs a call a rule covers at once, without anyone approving, and journals the rule', async () => {
    const before = http.requests.length;
    const r = await call('create_note', { title: 'ci-101', project: 'web', priority: 2, idempotency_key: key() });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.header(before, 'authorization'), `Bearer ${TOKEN}`);
    coveredCallId = facts(r)['call_id'];
    const op = await inst.operator();
    try {
      assert.deepEqual(await op.request('approvals.list', {}), [], 'no card was ever opened');
    } finally {
      op.close();
    }
    const show = await inst.sb.run(['audit', 'show', String(coveredCallId)]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /pre-approval rule\s+ci_notes/);
    assert.match(show.stdout, /approval\s+per-call: approved/);
    const json = JSON.parse((await inst.sb.run(['audit', 'show', String(coveredCallId), '--json'])).stdout) as { call: { approval: Record<string, unknown> } };
    assert.equal(json.call.approval['rule'], 'ci_notes');
    assert.equal(json.call.approval['decided_by'], 'rule ci_notes');
  });

  it('refuses a call no rule covers at once with APPROVAL_UNAVAILABLE; nothing is sent', async () => {
    const before = http.requests.length;
    const rows: Record<string, unknown>[] = [
      { title: 'ci-102', project: 'docs', priority: 1 }, // project not one of
      { title: 'ci-102', project: 'web', priority: 4 }, // priority above max
      { title: 'deploy now', project: 'web', priority: 1 }, // title not the pattern
      { title: 'xci-102', project: 'web', priority: 1 }, // the pattern is anchored
    ];
    for (const args of rows) {
      const r = await call('create_note', { ...args, idempotency_key: key() });
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.equal(facts(r)['error_code'], 'APPROVAL_UNAVAILABLE');
      assert.equal(facts(r)['side_effect_started'], false);
      assert.equal(facts(r)['required_action'], 'add_preapproval_rule_or_run_attended');
      assert.match(String(facts(r)['message']), /no pre-approval rule in the accepted catalog covers this call/);
    }
    assert.equal(http.requests.length, before, 'the target saw no request');
  });

  it('runs a tool that needs no approval as always', async () => {
    const r = await call('read_json', {});
    assert.equal(r.isError, undefined, JSON.stringify(r));
  });

  it('never pre-approves a widening revision, even with a matching rule', async () => {
    const before = http.requests.length;
    // Planned against revision 1 (POST); revision 2 runs (PUT): the revision widens the authority the session saw.
    const r = await call('post_thing', { title: 'hello', idempotency_key: key() }, { 'dev.postern/revision': 1 });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(facts(r)['error_code'], 'APPROVAL_UNAVAILABLE');
    assert.equal(facts(r)['side_effect_started'], false);
    assert.match(String(facts(r)['message']), /widening revisions are never pre-approved/);
    assert.equal(http.requests.length, before, 'the target saw no request');
    // The same rule approves the call planned against the revision that runs (the session lists it).
    await agent.listTools();
    const ok = await call('post_thing', { title: 'hello', idempotency_key: key() });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.equal(http.requests.length, before + 1);
    assert.equal(http.requests[before]?.method, 'PUT');
  });

  it('refuses once a rule budget is used up', async () => {
    const second = await call('create_note', { title: 'ci-103', project: 'api', priority: 0, idempotency_key: key() });
    assert.equal(second.isError, undefined, JSON.stringify(second));
    const before = http.requests.length;
    const third = await call('create_note', { title: 'ci-104', project: 'api', priority: 0, idempotency_key: key() });
    assert.equal(third.isError, true);
    assert.equal(facts(third)['error_code'], 'APPROVAL_UNAVAILABLE');
    assert.match(String(facts(third)['message']), /budget of every pre-approval rule that covers this call is used up/);
    assert.equal(facts(third)['reason'], 'budget_used');
    assert.deepEqual(facts(third)['rules'], ['ci_notes']);
    assert.equal(http.requests.length, before, 'the target saw no request');
  });

  it('reports the run: calls, what approved them, what was denied and why, budgets used', async () => {
    const r = await report();
    assert.equal(r['format'], 'postern.run-report/1');
    assert.equal(r['mode'], 'unattended');
    assert.equal(r['final'], false);
    assert.deepEqual(r['calls'], { total: 10, succeeded: 4, failed: 0, rejected: 6, replayed: 0, outcome_unknown: 0, in_progress: 0 });
    assert.deepEqual(r['approved'], { without_approval: 1, by_rule: { ci_notes: 2, things: 1 }, by_operator: 0 });
    assert.deepEqual(r['denied'], { unavailable: { widening: 1, no_rule: 4, outgrown: 0, budget_used: 1 }, by_code: { APPROVAL_UNAVAILABLE: 6 } });
    assert.deepEqual(r['budgets'], [
      { rule: 'ci_notes', tool: 'create_note', budget: 2, used: 2, left: 0 },
      { rule: 'things', tool: 'post_thing', budget: 10, used: 1, left: 9 },
    ]);
    // The CLI prints the same report as JSON on stdout.
    const cli = await inst.sb.run(['approvals', 'report', '--passphrase-file', inst.passFile]);
    assert.equal(cli.code, 0, cli.stderr);
    const printed = JSON.parse(cli.stdout) as Record<string, unknown>;
    assert.deepEqual(printed['calls'], r['calls']);
    assert.deepEqual(printed['budgets'], r['budgets']);
  });

  it('writes the final report to run-report.json (0600) at a clean stop', async () => {
    const code = await inst.stopDaemon('SIGTERM');
    assert.equal(code, 0, inst.daemonLog);
    const path = join(inst.sb.home, 'run-report.json');
    assert.match(inst.daemonLog, /run report written to .*run-report\.json/);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    const r = JSON.parse(await readFile(path, 'utf8')) as RunReport;
    assert.equal(r['final'], true);
    assert.equal(r['calls']['total'], 10);
    assert.deepEqual(r['approved']['by_rule'], { ci_notes: 2, things: 1 });
    assert.deepEqual(r['denied']['by_code'], { APPROVAL_UNAVAILABLE: 6 });
    assert.ok(!JSON.stringify(r).includes(TOKEN));
  });
});
