/**
 * Approval waits that fit real MCP clients (issue 10 §3; docs/decisions.md,
 * "Approval waits that fit MCP clients"). The SDK 1.x client, and the 2.x
 * client in its default era and pinned to 2026-07-28, over real stdio
 * (`postern mcp`) → the real daemon → a loopback HTTP service with its
 * append-only request log; decisions go through the operator channel.
 *
 * - A client that resets its timeout on progress outlives its own (short)
 *   request timeout while the call waits, and is approved; the same client
 *   without the reset times out — the control that shows the reset is what
 *   keeps it alive — and its giving up cancels the card.
 * - A client that cancels, or closes its connection, cancels the card at
 *   once: the journal says cancelled, an approval of the stale id is
 *   APPROVAL_NOT_FOUND, and the target never sees a request.
 * - A client with the default configuration (no progress token, its SDK's
 *   60 s timeout) is answered APPROVAL_PENDING well before that timeout, the
 *   card stays open, an approval runs nothing by itself, and the same call
 *   again runs once — also from a new session, after the first one ended; a
 *   card no call takes back is journaled with how it ended (approval_ended).
 * Waits are on events (queue events from the operator channel, progress
 * notifications as they arrive), never on sleeps: elapsed time is proven by
 * counting progress notifications, which the daemon spaces by its interval.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { ErrorCodes } from '../../src/rules/errors.js';
import type { ApprovalCard, ApprovalDecision } from '../../src/protocol/approvals.js';
import type { OperatorEvent } from '../../src/protocol/operator/index.js';
import { openJournals, type CallView } from '../../src/journal/index.js';
import { join } from 'node:path';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { childEnv, CLI } from '../helpers/cli.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture, TOOLS } from '../helpers/fixture.js';

const TOKEN = canary('waits');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
/** Progress is sent every 200 ms; the clients' own timeout is 1 s. */
const INTERVAL_S = 0.2;
const CLIENT_TIMEOUT_MS = 1000;
/** Ten notifications span at least nine intervals (1.8 s): longer than the client's timeout. */
const PROGRESS_PAST_TIMEOUT = 10;
/** A client that sent no progress token is answered APPROVAL_PENDING after this long. */
const WAIT_WITHOUT_PROGRESS_S = 1.5;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };
interface CallOptions {
  signal?: AbortSignal;
  timeout?: number;
  resetTimeoutOnProgress?: boolean;
  onprogress?: (p: { progress: number; message?: string }) => void;
}
interface Agent {
  readonly name: string;
  call(args: Record<string, string>, o?: CallOptions): Promise<Result>;
  close(): Promise<void>;
  /** A new client of the same kind, over its own shim. */
  another(): Promise<Agent>;
}

describe('approval waits fit real MCP clients', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let op: Awaited<ReturnType<Installation['operator']>>;
  const listeners = new Set<(e: OperatorEvent) => boolean>();

  /** The first queue event that `pick` maps to a value. Register before the action that causes it. */
  function nextEvent<T>(pick: (e: OperatorEvent) => T | undefined): Promise<T> {
    return new Promise((resolve) => {
      listeners.add((e) => {
        const v = pick(e);
        if (v === undefined) return false;
        resolve(v);
        return true;
      });
    });
  }
  const nextCard = (): Promise<ApprovalCard> => nextEvent((e) => (e.type === 'approval.added' ? e.card : undefined));
  const resolvedOf = (id: string): Promise<ApprovalDecision> => nextEvent((e) => (e.type === 'approval.resolved' && e.id === id ? e.decision : undefined));

  async function v1Agent(): Promise<Agent> {
    const client = new ClientV1({ name: 'agent-sdk-1', version: '1.0.0' });
    await client.connect(new StdioV1({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' }));
    await client.listTools();
    return {
      name: 'sdk-1.x',
      call: async (args, o = {}) => (await client.callTool({ name: 'gated_write', arguments: args }, undefined, o)) as Result,
      close: () => client.close(),
      another: v1Agent,
    };
  }

  /** The 2.x client, in the era it negotiates by default (2025-11-25, `initialize`) or pinned to 2026-07-28. */
  async function v2Agent(era: 'default' | '2026-07-28' = 'default'): Promise<Agent> {
    const transport = new StdioV2({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' });
    const client = new ClientV2({ name: 'agent-sdk-2', version: '1.0.0' }, era === 'default' ? {} : { versionNegotiation: { mode: { pin: era } } });
    await client.connect(transport);
    if (era !== 'default') assert.equal(client.getNegotiatedProtocolVersion(), era);
    await client.listTools();
    return {
      name: `sdk-2.x@${client.getNegotiatedProtocolVersion() ?? '?'}${era === 'default' ? ' (default)' : ' (pinned)'}`,
      call: async (args, o = {}) => (await client.callTool({ name: 'gated_write', arguments: args }, o)) as Result,
      close: () => client.close(),
      another: () => v2Agent(era),
    };
  }
  const agents = (): Promise<Agent>[] => [v1Agent(), v2Agent(), v2Agent('2026-07-28')];

  async function journalOf(k: string): Promise<CallView[]> {
    const r = await inst.sb.run(['audit', 'activity', '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as CallView[]).filter((c) => c.call.idempotency_key === k);
  }

  async function pendingIds(): Promise<string[]> {
    return (await op.request('approvals.list', {})).map((c) => c.id);
  }

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      tools: TOOLS.gatedWrite,
      config: { approval_timeout_seconds: 60, progress_interval_seconds: INTERVAL_S, approval_wait_without_progress_seconds: WAIT_WITHOUT_PROGRESS_S },
    }));
    op = await inst.operator();
    await op.subscribe((env) => {
      for (const l of [...listeners]) if (l(env.event)) listeners.delete(l);
    });
  });

  after(async () => {
    op.close();
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  it('a client that resets its timeout on progress outlives that timeout while it waits, then is approved', async (t) => {
    for (const made of agents()) {
      const a = await made;
      t.diagnostic(a.name);
      const before = http.requests.length;
      const progress: string[] = [];
      let enough: () => void = () => undefined;
      const pastTimeout = new Promise<void>((resolve) => (enough = resolve));
      const appeared = nextCard();
      const k = key();
      const call = a.call(
        { title: `long wait ${a.name}`, idempotency_key: k },
        {
          timeout: CLIENT_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          onprogress: (p) => {
            progress.push(p.message ?? '');
            if (progress.length === PROGRESS_PAST_TIMEOUT) enough();
          },
        },
      );
      const card = await appeared;
      await pastTimeout;
      assert.match(progress[0] ?? '', new RegExp(`waiting for operator approval ${card.id.slice(0, 8)}`), a.name);
      assert.equal(http.requests.length, before, `${a.name}: nothing runs before the approval`);
      await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once' } });
      const r = await call;
      assert.equal(r.isError, undefined, `${a.name}: ${JSON.stringify(r)}`);
      assert.equal(http.requests.length, before + 1, `${a.name}: the approved call ran once`);
      await a.close();
    }
  });

  it('control: without the reset the client times out, and its giving up cancels the card', async () => {
    for (const made of agents()) {
      const a = await made;
      const appeared = nextCard();
      const k = key();
      const call = a.call({ title: `no reset ${a.name}`, idempotency_key: k }, { timeout: CLIENT_TIMEOUT_MS, onprogress: () => undefined });
      const timedOut = assert.rejects(call, /timed out|timeout/i, `${a.name}: the client gives up after its own timeout`);
      const card = await appeared;
      const resolved = resolvedOf(card.id);
      await timedOut;
      assert.equal((await resolved).kind, 'cancelled', a.name);
      assert.ok(!(await pendingIds()).includes(card.id), `${a.name}: the card is gone`);
      await a.close();
    }
  });

  it('a client that cancels, or closes its connection, cancels the card: journaled cancelled, the stale id is not found, nothing ran', async () => {
    const before = http.requests.length;
    for (const made of agents()) {
      for (const how of ['cancel', 'close'] as const) {
        const a = how === 'cancel' ? await made : await (await made).another();
        const ctl = new AbortController();
        const appeared = nextCard();
        const k = key();
        const call = a.call({ title: `give up ${how}`, idempotency_key: k }, { signal: ctl.signal, onprogress: () => undefined });
        // A cancelled request is not answered (MCP); a closing client may still read the daemon's answer as it shuts down.
        const unanswered = call.then(
          (r) => assert.ok(how === 'close' && r.structuredContent?.['error_code'] === 'CALL_CANCELLED', `${a.name} ${how}: ${JSON.stringify(r)}`),
          () => undefined,
        );
        const card = await appeared;
        const resolved = resolvedOf(card.id);
        if (how === 'cancel') ctl.abort();
        else await a.close();
        assert.equal((await resolved).kind, 'cancelled', `${a.name} ${how}`);
        await unanswered;
        assert.ok(!(await pendingIds()).includes(card.id), `${a.name} ${how}: the card left the queue`);
        await assert.rejects(op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once' } }), (e: Error & { code?: string }) => e.code === 'APPROVAL_NOT_FOUND');
        const rows = await journalOf(k);
        assert.equal(rows.length, 1, `${a.name} ${how}: one journal row`);
        assert.equal(rows[0]?.rejection?.error_code, 'CALL_CANCELLED', `${a.name} ${how}`);
        assert.equal(rows[0]?.call.approval?.outcome, 'cancelled', `${a.name} ${how}`);
        assert.equal(rows[0]?.call.side_effect_started, false);
        if (how === 'cancel') await a.close();
      }
    }
    assert.equal(http.requests.length, before, 'the target saw no request');
  });

  it('a default client is answered APPROVAL_PENDING before its own timeout; the card stays open and the same call again runs once', async () => {
    for (const made of agents()) {
      const a = await made;
      const before = http.requests.length;
      const args = { title: `default ${a.name}`, idempotency_key: key() };
      const appeared = nextCard();
      // The client's own configuration: no progress token, its SDK's default 60 s request timeout.
      const first = await a.call(args);
      const card = await appeared;
      const sc = first.structuredContent ?? {};
      assert.equal(first.isError, true, `${a.name}: ${JSON.stringify(first)}`);
      assert.equal(sc['error_code'], 'APPROVAL_PENDING', a.name);
      assert.equal(sc['side_effect_started'], false, a.name);
      assert.equal(sc['required_action'], ErrorCodes.APPROVAL_PENDING.action, a.name);
      assert.equal(sc['approval_id'], card.id, a.name);
      assert.ok((await pendingIds()).includes(card.id), `${a.name}: the card is still open`);

      // Asked again before the decision: it waits on the same card and is answered the same way.
      const again = await a.call(args);
      assert.equal(again.structuredContent?.['error_code'], 'APPROVAL_PENDING', a.name);
      assert.equal(again.structuredContent?.['approval_id'], card.id, `${a.name}: the same card, not a second one`);

      await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once' } });
      assert.equal(http.requests.length, before, `${a.name}: an approval runs nothing by itself`);
      const ran = await a.call(args);
      assert.equal(ran.isError, undefined, `${a.name}: ${JSON.stringify(ran)}`);
      assert.equal(http.requests.length, before + 1, `${a.name}: the same call again ran once`);
      const replayed = await a.call(args);
      assert.equal(replayed.structuredContent?.['replayed'], true, a.name);
      assert.equal(http.requests.length, before + 1, `${a.name}: never twice`);
      const rows = await journalOf(args.idempotency_key);
      // Two answers "pending", the run (approved), the replay (no approval of its own).
      assert.deepEqual(rows.map((r) => String(r.call.approval?.outcome ?? null)).sort(), ['approved', 'null', 'pending', 'pending'], a.name);
      await a.close();
    }
  });

  /** Calls `args` until APPROVAL_PENDING, then ends the session and waits until the daemon has seen it end. */
  async function leaveOpen(a: Agent, args: Record<string, string>): Promise<ApprovalCard> {
    const appeared = nextCard();
    const first = await a.call(args);
    assert.equal(first.structuredContent?.['error_code'], 'APPROVAL_PENDING', a.name);
    const card = await appeared;
    const closed = nextEvent((e) => (e.type === 'session.closed' && e.id === card.session.id ? true : undefined));
    await a.close();
    await closed;
    return card;
  }

  it('a card left open outlives its session; the same key and arguments from a new session take the decision and run once', async () => {
    for (const made of agents()) {
      const a = await made;
      const before = http.requests.length;
      const args = { title: `reconnected ${a.name}`, idempotency_key: key() };
      const card = await leaveOpen(a, args);
      assert.ok((await pendingIds()).includes(card.id), `${a.name}: the card stays until its time runs out`);
      await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once' } });
      const b = await v2Agent();
      const ran = await b.call(args);
      assert.equal(ran.isError, undefined, `${a.name}: ${JSON.stringify(ran)}`);
      assert.equal(http.requests.length, before + 1, `${a.name}: ran once, from the new session`);
      const rows = await journalOf(args.idempotency_key);
      assert.deepEqual(rows.map((r) => String(r.call.approval?.outcome ?? null)).sort(), ['approved', 'pending'], a.name);
      await b.close();
    }
  });

  it('a card left open that no call takes back is journaled with how it ended', async () => {
    const a = await v2Agent();
    const args = { title: 'never taken back', idempotency_key: key() };
    const card = await leaveOpen(a, args);
    const [pending] = await journalOf(args.idempotency_key);
    await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'deny', reason: 'not now' } });
    const ended = (): { data: Record<string, unknown> } | undefined => {
      const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
      try {
        return j.sessions.latestEvent(card.session.id, 'approval_ended');
      } finally {
        j.close();
      }
    };
    // The denial is held for a call to take it until the card's time; a lock ends the hold now.
    assert.equal(ended(), undefined, 'not yet: a call may still take the decision');
    await op.request('lock', {});
    const line = ended();
    assert.ok(line !== undefined, 'journaled approval_ended');
    assert.equal(line.data?.['outcome'], 'denied');
    assert.equal(line.data?.['call_id'], pending?.call.call_id);
    assert.equal(line.data?.['idempotency_key'], args.idempotency_key);
  });
});
