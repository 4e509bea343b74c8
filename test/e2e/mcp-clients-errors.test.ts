/**
 * Every MCP client sees Postern's errors (issue 8 item 2; DESIGN §12): the
 * README's table of agent errors, each code produced for real — a loopback
 * HTTP service, an in-process SSH server, the operator channel, a locked
 * journal, a kill -9 of the daemon — and received by three clients over real
 * stdio against the built CLI (`postern mcp`):
 *   - the TypeScript SDK 1.x client, which validates `structuredContent`
 *     against the tool's `outputSchema` even for `isError` results and throws
 *     -32602 on a mismatch;
 *   - the SDK 2.x client (validates successes only);
 *   - the MCP Inspector CLI (`--cli … --method tools/call`, SDK 1.x inside; it
 *     lists the tools before each call, so its validator is armed).
 * A success of a tool with a declared output schema is checked by all three
 * too. Two codes cannot come to the Inspector CLI 0.15 as a call result: it
 * cannot send `_meta` (so no CONTRACT_STALE by a declared revision; each run is
 * a new session that lists first), and it cannot cancel; CALL_CANCELLED reaches
 * no client as a result at all (MCP does not answer a cancelled request), so
 * every client reads it from `postern_call_status`. Waits are on events (operator queue events, requests at the service),
 * never on sleeps.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCodes, type ErrorCode } from '../../src/rules/errors.js';
import type { ApprovalCard } from '../../src/protocol/approvals.js';
import type { OperatorEvent, OperatorEventEnvelope } from '../../src/protocol/operator/index.js';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { childEnv, CLI } from '../helpers/cli.js';
import { install, type Installation } from '../helpers/daemon.js';
import { CLIENT_KEY, keyPair, startSshServer, type TestSshServer } from '../unit/executors/ssh/support.js';

const TOKEN = `CANARY-tok-${randomBytes(12).toString('hex')}`;
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const INSPECTOR = join(process.cwd(), 'node_modules', '@modelcontextprotocol', 'inspector', 'cli', 'build', 'cli.js');

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };
type Args = Record<string, string>;

/** One way of calling a tool; `name` says which client it is. */
interface Agent {
  readonly name: 'sdk-1.x' | 'sdk-2.x' | 'inspector-cli';
  call(tool: string, args: Args, opts?: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<Result>;
  /** Whether this client can send `_meta` and cancel a call (the Inspector CLI can do neither). */
  readonly full: boolean;
  close(): Promise<void>;
}

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const okBody = { type: 'object', properties: { ok: { const: true } }, required: ['ok'] };

function catalogFor(origin: string, ssh: { port: number; pin: string }) {
  const read = (description: string, target: string, path: string, extra: Record<string, unknown> = {}, query?: Record<string, string>) => ({
    description,
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: obj({}), http: { target, method: 'GET', path, ...(query === undefined ? {} : { query }) }, ...extra }],
  });
  const write = (description: string, approval: 'none' | 'per-call', path: string) => ({
    description,
    effect: 'write',
    approval,
    revisions: [{ revision: 1, input: obj({ title: { type: 'string', maxLength: 100 } }, ['title']), http: { target: 'local', method: 'POST', path, body: { title: '{title}' } } }],
  });
  return {
    targets: {
      local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } },
      // This machine's own name resolves to loopback, and the target is not marked local.
      guarded: { http: { origin: `https://${hostname()}:${new URL(origin).port}`, credential: 'api-token', auth: 'bearer' } },
      // Accepted while each credential fits; the test then removes one and replaces the other with another kind.
      wrong_kind: { http: { origin, credential: 'flip-key', auth: 'bearer', allow_private: true } },
      gone: { http: { origin, credential: 'gone-key', auth: 'bearer', allow_private: true } },
      unpinned: { ssh: { host: '127.0.0.1', port: ssh.port, user: 'deploy', credential: 'deploy-key' } },
      impostor: { ssh: { host: '127.0.0.1', port: ssh.port, user: 'deploy', credential: 'deploy-key', host_key: ssh.pin } },
    },
    tools: {
      read_json: read('Read JSON that matches the declared output.', 'local', '/json', { output: okBody }),
      read_failing: read('A target answering 500 with a body that does not match the declared output.', 'local', '/status/500', { output: okBody }),
      read_mismatch: read('A target answering 200 outside the declared output.', 'local', '/json', { output: obj({ id: { type: 'string' } }, ['id']) }),
      read_slow_body: read('A body that pauses longer than the body timeout.', 'local', '/slow-body', {}, { ms: '20000' }),
      read_guarded: read('A name that resolves to loopback.', 'guarded', '/json'),
      read_wrong_kind: read('A credential of the wrong kind.', 'wrong_kind', '/json'),
      read_gone: read('A credential removed from the vault.', 'gone', '/json'),
      echo_read: {
        description: 'Echo a short query.',
        effect: 'read',
        approval: 'none',
        revisions: [{ revision: 1, input: obj({ q: { type: 'string', maxLength: 50 } }), http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }],
      },
      drift_read: {
        description: 'Revision 2 rejects calls planned against revision 1.',
        effect: 'read',
        approval: 'none',
        revisions: [
          { revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' } },
          { revision: 2, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' }, previous: { policy: 'reject' } },
        ],
      },
      retired_read: { description: 'Retired.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' }, retired: { replacement: 'read_json' } }] },
      ssh_unpinned: { description: 'An SSH target with no pinned host key.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), ssh: { target: 'unpinned', argv: ['true'] } }] },
      ssh_impostor: { description: 'An SSH server whose key is not the pinned one.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), ssh: { target: 'impostor', argv: ['true'] } }] },
      note_write: write('A write with no approval.', 'none', '/echo'),
      gated_write: write('A write that needs a per-call approval.', 'per-call', '/echo'),
      hang_write: write('A write whose target never answers.', 'none', '/hang'),
    },
  };
}

function parseResult(stdout: string): Result {
  return JSON.parse(stdout) as Result;
}

describe('every MCP client receives every agent error code, valid against the advertised output schema', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let ssh: TestSshServer;
  let agents: Agent[];
  let op: Awaited<ReturnType<Installation['operator']>>;
  const pending = new Map<string, ApprovalCard>();
  const waiters: { tool: string; resolve: (c: ApprovalCard) => void }[] = [];
  const hangArrivals: (() => void)[] = [];
  /** Responses of /hang, held open until released. */
  const held: ServerResponse[] = [];
  const hangArrived = (): Promise<void> => new Promise((resolve) => hangArrivals.push(resolve));
  /** Test-specific listeners for queue events; each returns true when it is done. */
  const listeners = new Set<(e: OperatorEvent) => boolean>();

  /** The next approval card for `tool`: one already pending, or the next one added. */
  function nextCard(tool: string): Promise<ApprovalCard> {
    for (const c of pending.values()) {
      if (c.tool === tool) {
        pending.delete(c.id);
        return Promise.resolve(c);
      }
    }
    return new Promise((resolve) => waiters.push({ tool, resolve }));
  }

  function onEvent(env: OperatorEventEnvelope): void {
    const e = env.event;
    for (const l of [...listeners]) if (l(e)) listeners.delete(l);
    if (e.type === 'approval.resolved') {
      pending.delete(e.id);
      return;
    }
    if (e.type !== 'approval.added') return;
    const i = waiters.findIndex((w) => w.tool === e.card.tool);
    if (i >= 0) waiters.splice(i, 1)[0]?.resolve(e.card);
    else pending.set(e.card.id, e.card);
  }

  async function decide(tool: string, verdict: { verdict: 'approve'; scope: 'once' } | { verdict: 'deny'; reason: string | null }): Promise<void> {
    const card = await nextCard(tool);
    await op.request('approvals.decide', { approval_id: card.id, verdict });
  }

  async function v1Agent(): Promise<Agent> {
    const client = new ClientV1({ name: 'agent-sdk-1', version: '1.0.0' });
    await client.connect(new StdioV1({ command: process.execPath, args: [CLI, 'mcp'], env: childEnv(inst.sb.home), stderr: 'pipe' }));
    await client.listTools(); // arms the 1.x client's output validators, as an agent host's listing does
    return {
      name: 'sdk-1.x',
      full: true,
      call: async (tool, args, o = {}) =>
        (await client.callTool({ name: tool, arguments: args, ...(o.meta === undefined ? {} : { _meta: o.meta }) }, undefined, o.signal === undefined ? {} : { signal: o.signal })) as Result,
      close: () => client.close(),
    };
  }

  async function v2Agent(): Promise<Agent> {
    const client = await inst.client({ name: 'agent-sdk-2' });
    await client.listTools();
    return {
      name: 'sdk-2.x',
      full: true,
      call: async (tool, args, o = {}) => (await client.callTool({ name: tool, arguments: args, ...(o.meta === undefined ? {} : { _meta: o.meta }) }, o.signal === undefined ? {} : { signal: o.signal })) as Result,
      close: () => client.close(),
    };
  }

  function inspectorAgent(): Agent {
    return {
      name: 'inspector-cli',
      full: false,
      call: (tool, args) =>
        new Promise((resolve, reject) => {
          const argv = [INSPECTOR, '--cli', process.execPath, CLI, 'mcp', '-e', `POSTERN_HOME=${inst.sb.home}`, '--method', 'tools/call', '--tool-name', tool];
          for (const [k, v] of Object.entries(args)) argv.push('--tool-arg', `${k}=${v}`);
          const child = spawn(process.execPath, argv, { env: childEnv(inst.sb.home), stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          let err = '';
          child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
          child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
          child.once('exit', (code) => {
            if (code !== 0) return reject(new Error(`inspector exited ${code}: ${err.trim()}`));
            try {
              resolve(parseResult(out));
            } catch {
              reject(new Error(`inspector printed no JSON: ${out}\n${err}`));
            }
          });
        }),
      close: () => Promise.resolve(),
    };
  }

  before(async () => {
    http = await startFakeHttp();
    http.route('/hang', (_req, res) => {
      held.push(res);
      hangArrivals.shift()?.(); // one waiter per arrival
      // answers only when the test releases it
    });
    const hostKey = keyPair();
    ssh = await startSshServer(hostKey);
    inst = await install({
      secrets: [
        { name: 'api-token', kind: 'http_bearer', value: TOKEN },
        { name: 'flip-key', kind: 'http_bearer', value: `flip-${randomBytes(8).toString('hex')}` },
        { name: 'gone-key', kind: 'http_bearer', value: `gone-${randomBytes(8).toString('hex')}` },
        { name: 'deploy-key', kind: 'ssh_key', value: CLIENT_KEY.private },
      ],
      config: {
        approval_timeout_seconds: 2,
        max_request_bytes: 2048,
        // A completed key is past retention within a millisecond: IDEMPOTENCY_KEY_EXPIRED without waiting on a clock.
        idempotency_retention_days: 1e-9,
        http: { body_timeout_ms: 300 },
      },
    });
    await inst.acceptCatalog(catalogFor(http.origin, { port: ssh.port, pin: keyPair().fingerprint }));
    await inst.startDaemon();
    op = await inst.operator();
    for (const c of (await op.subscribe(onEvent)).pending) pending.set(c.id, c);
    agents = [await v1Agent(), await v2Agent(), inspectorAgent()];
  });

  after(async () => {
    op.close();
    for (const a of agents) await a.close().catch(() => undefined);
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
    await ssh.close();
  });

  /** The facts every agent error carries, with the required action of its own code. */
  function assertError(r: Result, code: ErrorCode, who: string, sideEffect: boolean | null): void {
    const sc = r.structuredContent ?? {};
    assert.equal(r.isError, true, `${who}: ${JSON.stringify(r)}`);
    assert.equal(sc['error_code'], code, `${who}: ${JSON.stringify(sc)}`);
    assert.equal(sc['required_action'], ErrorCodes[code].action, who);
    assert.equal(sc['side_effect_started'], sideEffect, who);
    assert.equal(typeof sc['message'], 'string', who);
    assert.match(r.content?.[0]?.text ?? '', new RegExp(`^${code}: `), who);
  }

  /** Runs `scenario` with every client (the 1.x and Inspector ones throw -32602 if the result does not match the schema). */
  async function eachAgent(fn: (a: Agent) => Promise<void>, opts: { fullOnly?: boolean } = {}): Promise<void> {
    for (const a of agents) if (!opts.fullOnly || a.full) await fn(a);
  }

  it('a success of a tool with a declared output schema validates for every client', async () => {
    await eachAgent(async (a) => {
      const r = await a.call('read_json', {});
      assert.equal(r.isError, undefined, `${a.name}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.structuredContent?.['body'], { ok: true, items: [1, 2, 3] });
    });
  });

  it('OUTPUT_CONTRACT_MISMATCH: a 200 outside the declared output schema — the effect happened, the field is named — validates for every client', async () => {
    await eachAgent(async (a) => {
      const r = await a.call('read_mismatch', {});
      assertError(r, 'OUTPUT_CONTRACT_MISMATCH', a.name, true);
      assert.deepEqual([r.structuredContent?.['field'], r.structuredContent?.['planned_revision']], ['body.id', 1], a.name);
    });
  });

  it('refusals before any effect: VALIDATION_FAILED, REQUEST_TOO_LARGE, TOOL_NOT_FOUND, SECRET_IN_ARGUMENTS, IDEMPOTENCY_KEY_REQUIRED', async () => {
    const before = http.requests.length;
    await eachAgent(async (a) => {
      assertError(await a.call('echo_read', { q: 'x'.repeat(51) }), 'VALIDATION_FAILED', a.name, false);
      assertError(await a.call('echo_read', { q: 'x'.repeat(3000) }), 'REQUEST_TOO_LARGE', a.name, false);
      assertError(await a.call('no_such_tool', {}), 'TOOL_NOT_FOUND', a.name, false);
      assertError(await a.call('echo_read', { q: TOKEN }), 'SECRET_IN_ARGUMENTS', a.name, false);
      assertError(await a.call('note_write', { title: 'no key' }), 'IDEMPOTENCY_KEY_REQUIRED', a.name, false);
    });
    assert.equal(http.requests.length, before, 'nothing reached the target');
  });

  it('contracts: CONTRACT_STALE (a revision declared in _meta) and REVISION_RETIRED', async () => {
    await eachAgent(async (a) => {
      assertError(await a.call('drift_read', {}, { meta: { 'dev.postern/revision': 1 } }), 'CONTRACT_STALE', a.name, false);
    }, { fullOnly: true });
    await eachAgent(async (a) => assertError(await a.call('retired_read', {}), 'REVISION_RETIRED', a.name, false));
  });

  it('idempotency: IDEMPOTENCY_KEY_CONFLICT, IDEMPOTENCY_KEY_EXPIRED, CALL_IN_PROGRESS', async () => {
    await eachAgent(async (a) => {
      const k = key();
      const first = await a.call('note_write', { title: 'first', idempotency_key: k });
      assert.equal(first.isError, undefined, `${a.name}: ${JSON.stringify(first)}`);
      assertError(await a.call('note_write', { title: 'other', idempotency_key: k }), 'IDEMPOTENCY_KEY_CONFLICT', a.name, false);
      assertError(await a.call('note_write', { title: 'first', idempotency_key: k }), 'IDEMPOTENCY_KEY_EXPIRED', a.name, false);

    });
    // Keys are shared across sessions: a call held at the target keeps its key busy for every client.
    const busy = key();
    const arrived = hangArrived();
    const holder = agents[1]!.call('hang_write', { title: 'busy', idempotency_key: busy });
    await arrived;
    await eachAgent(async (a) => assertError(await a.call('hang_write', { title: 'busy', idempotency_key: busy }), 'CALL_IN_PROGRESS', a.name, false));
    for (const res of held.splice(0)) res.end('{}');
    assert.equal((await holder).isError, undefined);
  });

  it('approvals: APPROVAL_DENIED (with the reason), APPROVAL_TIMEOUT', async () => {
    const before = http.requests.length;
    await eachAgent(async (a) => {
      const denied = a.call('gated_write', { title: 'deny me', idempotency_key: key() });
      await decide('gated_write', { verdict: 'deny', reason: 'not today' });
      const r = await denied;
      assertError(r, 'APPROVAL_DENIED', a.name, false);
      assert.match(String(r.structuredContent?.['message']), /not today/);
      assertError(await a.call('gated_write', { title: 'nobody answers', idempotency_key: key() }), 'APPROVAL_TIMEOUT', a.name, false);
    });
    assert.equal(http.requests.length, before);
  });

  it('CALL_CANCELLED: the client cancels while the call waits; postern_call_status reports it to every client', async () => {
    const keys: string[] = [];
    await eachAgent(async (a) => {
      const k = key();
      keys.push(k);
      const ctl = new AbortController();
      const call = a.call('gated_write', { title: 'cancel me', idempotency_key: k }, { signal: ctl.signal });
      const card = await nextCard('gated_write');
      const resolved = new Promise<void>((resolve) => {
        listeners.add((e) => {
          if (e.type !== 'approval.resolved' || e.id !== card.id) return false;
          resolve();
          return true;
        });
      });
      ctl.abort();
      await assert.rejects(call, `${a.name}: a cancelled request is not answered (MCP cancellation)`);
      await resolved;
    }, { fullOnly: true });
    // The cancelled call's outcome is journaled; each client (the Inspector included) reads the code.
    for (const k of keys) {
      await eachAgent(async (a) => {
        const s = await a.call('postern_call_status', { idempotency_key: k });
        assert.equal(s.isError, undefined, `${a.name}: ${JSON.stringify(s)}`);
        assert.equal(s.structuredContent?.['error_code'], 'CALL_CANCELLED', `${a.name}: ${JSON.stringify(s.structuredContent)}`);
      });
    }
    for (const a of agents) assertError(await a.call('postern_call_status', { idempotency_key: key() }), 'CALL_NOT_FOUND', a.name, false);
  });

  it('targets: TARGET_ERROR (a body that does not match the declared output), TARGET_TIMEOUT, EGRESS_BLOCKED, CREDENTIAL_MISSING, CREDENTIAL_KIND_MISMATCH', async () => {
    // The running daemon follows the vault: one credential removed, the other re-added as another kind.
    const g = ['--passphrase-file', inst.passFile];
    for (const args of [['secret', 'rm', 'gone-key', '--yes', ...g], ['secret', 'rm', 'flip-key', '--yes', ...g], ['secret', 'add', 'flip-key', '--kind', 'http_header', '--header', 'X-Api-Key', '--stdin', ...g]]) {
      const r = await inst.sb.run(args, { input: `hdr-${randomBytes(8).toString('hex')}` });
      assert.equal(r.code, 0, r.stderr);
    }
    await eachAgent(async (a) => {
      const failing = await a.call('read_failing', {});
      assertError(failing, 'TARGET_ERROR', a.name, true);
      assert.equal(failing.structuredContent?.['status'], 500);
      assertError(await a.call('read_slow_body', {}), 'TARGET_TIMEOUT', a.name, true);
      const connections = http.connections;
      assertError(await a.call('read_guarded', {}), 'EGRESS_BLOCKED', a.name, false);
      assert.equal(http.connections, connections, 'no connection to a blocked address');
      const requests = http.requests.length;
      assertError(await a.call('read_gone', {}), 'CREDENTIAL_MISSING', a.name, false);
      assertError(await a.call('read_wrong_kind', {}), 'CREDENTIAL_KIND_MISMATCH', a.name, false);
      assert.equal(http.requests.length, requests, 'nothing was sent');
    });
  });

  it('SSH: HOST_KEY_UNKNOWN before contacting the host, HOST_KEY_MISMATCH with both fingerprints', async () => {
    await eachAgent(async (a) => {
      const accepted = ssh.accepted;
      assertError(await a.call('ssh_unpinned', {}), 'HOST_KEY_UNKNOWN', a.name, false);
      assert.equal(ssh.accepted, accepted, 'the host was not contacted');
      const r = await a.call('ssh_impostor', {});
      assertError(r, 'HOST_KEY_MISMATCH', a.name, false);
      assert.equal(r.structuredContent?.['offered_fingerprint'], ssh.hostKey.fingerprint);
      assert.equal(ssh.execs.length, 0, 'nothing ran');
    });
  });

  it('JOURNAL_UNAVAILABLE: a locked journal refuses the call before anything is sent', async () => {
    const before = http.requests.length;
    const db = new Database(join(inst.sb.home, 'journal', 'activity.db'), { timeout: 100 });
    try {
      db.exec('BEGIN EXCLUSIVE');
      await eachAgent(async (a) => assertError(await a.call('note_write', { title: 'locked out', idempotency_key: key() }), 'JOURNAL_UNAVAILABLE', a.name, false));
    } finally {
      db.exec('ROLLBACK');
      db.close();
    }
    assert.equal(http.requests.length, before);
  });

  it('kill -9 mid-call: DAEMON_UNAVAILABLE (lost in flight, effect null), DAEMON_UNAVAILABLE while down, then OUTCOME_UNKNOWN with side_effect_started null like postern_call_status; VAULT_LOCKED', async () => {
    const keys = new Map<string, string>();
    const inFlight = agents.map((a) => {
      const k = key();
      keys.set(a.name, k);
      const arrived = hangArrived();
      return { a, arrived, result: a.call('hang_write', { title: 'in flight', idempotency_key: k }) };
    });
    await Promise.all(inFlight.map((f) => f.arrived));
    op.close();
    assert.equal(await inst.stopDaemon('SIGKILL'), null);
    for (const f of inFlight) {
      const r = await f.result;
      assertError(r, 'DAEMON_UNAVAILABLE', f.a.name, null);
      assert.equal(r.structuredContent?.['outcome'], 'unknown', f.a.name);
    }
    await eachAgent(async (a) => assertError(await a.call('note_write', { title: 'while down', idempotency_key: key() }), 'DAEMON_UNAVAILABLE', a.name, false));

    await inst.startDaemon();
    await eachAgent(async (a) => {
      // Unknown is null, as postern_call_status says, never false ("it did not happen").
      const retry = await a.call('hang_write', { title: 'in flight', idempotency_key: keys.get(a.name) ?? '' });
      assertError(retry, 'OUTCOME_UNKNOWN', a.name, null);
      assert.equal(retry.structuredContent?.['outcome'], 'unknown', a.name);
      assert.match(retry.content?.[0]?.text ?? '', /\(side effect started: unknown\)$/, a.name);
      const status = await a.call('postern_call_status', { idempotency_key: keys.get(a.name) ?? '' });
      assert.equal(status.structuredContent?.['side_effect_started'], null, a.name);
    });

    op = await inst.operator();
    await op.request('lock', {});
    await eachAgent(async (a) => assertError(await a.call('note_write', { title: 'locked', idempotency_key: key() }), 'VAULT_LOCKED', a.name, false));
  });

});
