/**
 * A kill -9 of the daemon with many calls in flight, so that their intents
 * go through the group commit's shared path (several intents in one
 * transaction, its fsync off the event loop and shared, the anchor's
 * fdatasync in the thread pool): the seam between "committed" and "durable".
 * After a restart, every request the target received has its intent in the
 * journal (no effect before its intent is durable): a retry of its key is
 * OUTCOME_UNKNOWN and sends nothing; a key whose intent did not become
 * durable runs at most once more; the journal verifies against its anchor
 * and checkpoints. The real daemon, agents over `postern mcp`, a real target.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = canary('tok');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const AGENTS = 4;
const PER_AGENT = 8;

describe('a kill -9 with a group commit in flight', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agents: Client[] = [];
  /** While true, /hold keeps every response; afterwards it answers at once. */
  let holding = true;
  const held: ServerResponse[] = [];

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      routes: {
        '/hold': (_req, res) => {
          if (holding) held.push(res);
          else res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
        },
      },
      target: { idempotency_header: true },
      tools: {
        held_write: {
          description: 'A write whose target answers only when the test lets it.',
          effect: 'write',
          approval: 'none',
          revisions: [{ revision: 1, input: { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] }, http: { target: 'local', method: 'POST', path: '/hold', body: { title: '{title}' } } }],
        },
      },
    }));
    agents = await Promise.all(Array.from({ length: AGENTS }, (_, i) => inst.client({ name: `agent-${i}` })));
  });

  after(async () => {
    for (const r of held) r.destroy();
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    for (const a of agents) await a.close().catch(() => undefined);
    await inst.cleanup();
    await http.close();
  });

  const keyOf = (r: { headers: readonly (readonly [string, string])[] }): string | undefined => r.headers.find(([n]) => n.toLowerCase() === 'idempotency-key')?.[1];
  const call = async (c: Client, args: Record<string, unknown>): Promise<Result> => (await c.callTool({ name: 'held_write', arguments: args })) as Result;

  it('every request the target saw has a durable intent: its retry sends nothing; the rest run at most once; the journal verifies', async (t) => {
    const keys = Array.from({ length: AGENTS * PER_AGENT }, () => `key-${randomBytes(8).toString('hex')}`);
    const calls = keys.map((k, i) => call(agents[i % AGENTS]!, { title: `t-${i}`, idempotency_key: k }));
    // Kill while intents are still arriving: some requests are out, others are between commit and fsync, or not yet committed.
    await waitFor(() => http.requests.length >= AGENTS * PER_AGENT / 2, 'half of the requests to reach the target');
    assert.equal(await inst.stopDaemon('SIGKILL'), null);
    for (const r of await Promise.all(calls)) assert.equal(r.isError, true, 'a call lost with the daemon is reported, not left hanging');
    const seen = new Set(http.requests.map(keyOf).filter((k): k is string => k !== undefined));
    assert.ok(seen.size >= AGENTS * PER_AGENT / 2);

    await inst.startDaemon();
    holding = false;
    for (const r of held.splice(0)) r.destroy();
    const before = http.requests.length;
    const outcomes = new Map<string, unknown>();
    for (const [i, k] of keys.entries()) {
      const r = await call(agents[i % AGENTS]!, { title: `t-${i}`, idempotency_key: k });
      outcomes.set(k, r.structuredContent?.['error_code'] ?? (r.isError === true ? 'error' : 'ran'));
      if (seen.has(k)) {
        assert.equal(r.structuredContent?.['error_code'], 'OUTCOME_UNKNOWN', `key ${k} reached the target before the kill: its intent must have been durable (${JSON.stringify(r.structuredContent)})`);
      }
    }
    const after = http.requests.slice(before).map(keyOf);
    assert.ok(after.every((k) => k !== undefined && !seen.has(k)), 'no key the target saw before the kill was sent again');
    assert.equal(new Set(after).size, after.length, 'no key sent twice after the restart');
    for (const k of after) assert.equal(outcomes.get(k ?? ''), 'ran', `key ${k ?? '?'} was sent after the restart: it ran once, with no durable intent before`);

    const tally = [...outcomes.values()].reduce<Record<string, number>>((m, o) => ({ ...m, [String(o)]: (m[String(o)] ?? 0) + 1 }), {});
    t.diagnostic(`the target saw ${seen.size} of ${keys.length} keys before the kill; retried: ${JSON.stringify(tally)}`);
    const v = await inst.sb.run(['audit', 'verify', '--unlock', '--passphrase-file', inst.passFile]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
});
