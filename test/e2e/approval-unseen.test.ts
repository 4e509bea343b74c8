/**
 * Nothing unseen is approved, as the daemon enforces it and the CLI obeys it,
 * with the real daemon, its MCP shim, the real CLI and a fake HTTP target
 * whose request log says what ran. For every case of the unseen-content
 * corpus (test/helpers/unseen-corpus.ts): an operator op that approves the
 * card without saying its presentation was seen is refused APPROVAL_UNSEEN,
 * and so is one naming another presentation; `postern approvals approve`
 * without `--digest`, or with a prefix that is not the card's presentation
 * digest, is refused; nothing reached the target. `postern approvals show`
 * prints the whole presentation (every row, nothing cut) and its digest, and
 * approving with that digest's prefix runs the call — the payload reaches the
 * target only then.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { presentation } from '../../src/protocol/operator/index.js';
import { terminalLines } from '../../src/cli/context.js';
import { PIPED_COLUMNS } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { PAYLOAD, UNSEEN_CORPUS, corpusTools, payloadReached } from '../helpers/unseen-corpus.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

describe('nothing unseen is approved: the daemon refuses, the CLI needs the digest `show` printed', () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;
  const key = (): string => `k-${randomBytes(6).toString('hex')}`;
  const waiting = (name: string, args: Record<string, unknown>): Promise<Result> =>
    agent.callTool({ name, arguments: { ...args, idempotency_key: key() } }, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 120_000 }) as Promise<Result>;

  before(async () => {
    ({ http: target, inst } = await httpFixture({ token: canary('tok'), config: { approval_timeout_seconds: 120 }, catalog: ({ local }) => ({ targets: { target: local }, tools: corpusTools() }) }));
    events = await watchEvents(() => inst.operator());
    agent = await inst.client({ name: 'unseen-agent' });
  });
  after(async () => {
    events?.close();
    await inst?.cleanup();
    await target?.close();
  });

  for (const c of UNSEEN_CORPUS) {
    it(`${c.name}: refused without the seen presentation on the operator op and the CLI; runs after \`show\` and \`approve --digest\``, async () => {
      const from = target.requests.length;
      const ran = (): boolean => payloadReached(target.requests.slice(from));
      const call = waiting(c.tool, c.args);
      const { card } = await events.next('approval.added', (e) => e.card.tool === c.tool);
      const p = presentation(card);
      assert.equal(p.needsSeen, true, 'the card is larger than one view');
      const op = events.client;
      const base = { verdict: 'approve' as const, scope: 'once' as const, call_digest: card.call_digest };
      await assert.rejects(op.request('approvals.decide', { approval_id: card.id, verdict: base }), (e: Error & { code?: string }) => e.code === 'APPROVAL_UNSEEN');
      const other = p.digest.replace(/^./, (ch) => (ch === '0' ? '1' : '0'));
      await assert.rejects(op.request('approvals.decide', { approval_id: card.id, verdict: { ...base, seen: { presentation: other } } }), (e: Error & { code?: string }) => e.code === 'APPROVAL_UNSEEN');
      const g = ['--passphrase-file', inst.passFile];
      const bare = await inst.sb.run(['approvals', 'approve', card.id.slice(0, 8), ...g]);
      assert.notEqual(bare.code, 0);
      assert.match(bare.stderr, /approve needs --digest: run `postern approvals show [0-9a-f]{8}`/);
      const wrong = await inst.sb.run(['approvals', 'approve', card.id.slice(0, 8), '--digest', other.slice(0, 12), ...g]);
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.stderr, /APPROVAL_UNSEEN|is not \(a 8\+ character prefix of\) this card's presentation digest/);
      const short = await inst.sb.run(['approvals', 'approve', card.id.slice(0, 8), '--digest', p.digest.slice(0, 7), ...g]);
      assert.notEqual(short.code, 0, 'seven characters name nothing');
      assert.equal(ran(), false, 'nothing unseen ran');
      assert.ok((await op.request('approvals.list', {})).some((x) => x.id === card.id), 'the card still waits');

      const shown = await inst.sb.run(['approvals', 'show', card.id.slice(0, 8), ...g]);
      assert.equal(shown.code, 0, shown.stderr);
      for (const r of p.rows) assert.ok(shown.stdout.includes(terminalLines(`${r.label.padEnd(14)}${r.value}`, Number(PIPED_COLUMNS))), `show prints the ${r.label} row whole`);
      assert.ok(!/… \+\d+ more/.test(shown.stdout), 'nothing is cut');
      const printed = /presentation {2}sha256 ([0-9a-f]{64})/.exec(shown.stdout)?.[1];
      assert.equal(printed, p.digest);
      const ok = await inst.sb.run(['approvals', 'approve', card.id.slice(0, 8), '--digest', p.digest.slice(0, 8), ...g]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /^approved [0-9a-f]{8} \(\w+\) once, by /);
      const r = await call;
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.ok(ran(), 'seen whole and approved, it ran');
      assert.ok(target.requests.slice(from).some((x) => x.body.toString('utf8').includes(PAYLOAD)), 'the payload as the agent sent it');
    });
  }
});
