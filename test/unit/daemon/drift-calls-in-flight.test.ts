/**
 * Two rows of docs/drift-coverage.md, exercised end to end through the call
 * pipeline in-process (real vault with a cheap KDF, real journals, real
 * loopback targets that log every request):
 *   - seed 000 S4: a call in flight keeps the catalog snapshot it was
 *     admitted under — a catalog adopted while its request is at the target
 *     changes nothing of it (request, result, revisions); the next call plans
 *     against the new one;
 *   - seed 001 M6: a retry after a target's headers timeout consults the
 *     journal before any other effect — OUTCOME_UNKNOWN, explained as a
 *     target that did not answer in time (the effect is unknown), nothing sent
 *     again; `postern_call_status` reports it.
 * Nothing sleeps: the test waits for the target's request log, and the
 * timeout is a target that never answers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { snapshotOf } from '../../../src/daemon/services/state.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { handleCall } from '../../../src/daemon/pipeline/call.js';
import { META_REVISION, type Services, type SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { startFakeHttp, type FakeHttpServer } from '../../helpers/fake-http.js';
import { waitFor } from '../../helpers/wait.js';
import { CHEAP } from '../vault/helpers.js';
import { ManualClock } from '../../helpers/clock.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const title = { type: 'string', maxLength: 50 };

/** A pipeline over its own home: a vault with one bearer token, journals, and `config` (config.yaml text). */
async function pipelineHome(prefix: string, catalogText: string, config: string): Promise<{ svc: Services; journals: Journals; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const pass = Buffer.from(`${prefix}passphrase`);
  await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
  await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(`${prefix}token-0123456789`) } }), CHEAP);
  const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const journals = openJournals(join(dir, 'journal'), { clock });
  const svc = inProcessServices({ vault, catalog: parseCatalog(catalogText, 'catalog.yaml'), digest: '1'.padStart(64, '0'), journals, config: parseConfig(config, 'config.yaml'), clock }, { http: null });
  return {
    svc,
    journals,
    async close() {
      journals.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const session = (id: string, seen: [string, number][]): SessionInfo => ({ id, clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(seen), listedToolset: null });
const callOf = (svc: Services, who: SessionInfo, name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}): Promise<Result> =>
  handleCall(svc, who, { name, arguments: args, meta, signal: new AbortController().signal, progress: () => undefined }) as Promise<Result>;

describe('seed 000 S4: a call in flight keeps the snapshot it was admitted under', () => {
  let http: FakeHttpServer;
  let home: Awaited<ReturnType<typeof pipelineHome>>;
  const held: ServerResponse[] = [];
  const tools = (revisions: unknown[]) => stringify({ targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } }, tools: { note: { description: 'Write a note.', effect: 'write', approval: 'none', revisions } } });
  const r1 = { revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/hold', body: { title: '{title}' } } };
  const r2 = { revision: 2, input: obj({ title, region: { enum: ['eu', 'us'] } }, ['title', 'region']), http: { target: 'local', method: 'POST', path: '/hold', body: { title: '{title}', region: '{region}' } }, previous: { policy: 'adapt', defaults: { region: 'eu' } } };

  before(async () => {
    http = await startFakeHttp();
    // Holds the first call's request until the test answers it: that call is in flight for as long as the test needs.
    http.route('/hold', (_req, res, body) => {
      if (body.toString('utf8').includes('in flight')) held.push(res);
      else res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    home = await pipelineHome('postern-inflight-', tools([r1]), 'approval_timeout_seconds: 60');
  });
  after(async () => {
    for (const res of held) if (!res.writableEnded) res.end();
    await home.close();
    await http.close();
  });

  it('a catalog adopted while the request is at the target changes nothing of that call; the next call runs the new revision', async () => {
    const { svc, journals } = home;
    const who = session('s-inflight', [['note', 1]]);
    const running = callOf(svc, who, 'note', { title: 'in flight', idempotency_key: 'key-inflight-0001' });
    await waitFor(() => held.length === 1, 'the request reached the target');
    // Revision 2 is adopted while the call waits for its answer.
    svc.state.setSnapshot(snapshotOf(parseCatalog(tools([r1, r2]), 'catalog.yaml'), '2'.padStart(64, '0'), null));
    held[0]!.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    const r = await running;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(r.structuredContent?.['result_revision'], 1);
    assert.equal(r._meta?.[META_REVISION], 1, 'it ran revision 1, the one it was admitted under');
    const sent = http.requests.filter((x) => x.url.startsWith('/hold'));
    assert.equal(sent.length, 1);
    assert.deepEqual(JSON.parse(sent[0]!.body.toString('utf8')), { title: 'in flight' }, "revision 1's request, whole");
    const [row] = journals.activity.listCalls({ idempotency_key: 'key-inflight-0001', limit: 5 });
    assert.deepEqual([row?.status, row?.call.revision_seen, row?.call.revision_executed], ['success', 1, 1]);

    // The same session's next call plans against the catalog in use: adapted to revision 2.
    const next = await callOf(svc, who, 'note', { title: 'after', idempotency_key: 'key-inflight-0002' });
    assert.equal(next._meta?.[META_REVISION], 2, JSON.stringify(next));
    assert.deepEqual(JSON.parse(http.requests.at(-1)!.body.toString('utf8')), { title: 'after', region: 'eu' });
  });
});

describe('seed 001 M6: a retry after a timeout consults the journal before any other effect', () => {
  let http: FakeHttpServer;
  let home: Awaited<ReturnType<typeof pipelineHome>>;
  const held: ServerResponse[] = [];

  before(async () => {
    http = await startFakeHttp();
    // A target that never sends its response headers.
    http.route('/never', (_req, res) => void held.push(res));
    const text = stringify({
      targets: { local: { http: { origin: http.origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: { ticket: { description: 'Open a ticket.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input: obj({ title }, ['title']), http: { target: 'local', method: 'POST', path: '/never', body: { title: '{title}' } } }] } },
    });
    home = await pipelineHome('postern-timeout-retry-', text, 'approval_timeout_seconds: 60\nhttp:\n  headers_timeout_ms: 50');
  });
  after(async () => {
    for (const res of held) if (!res.writableEnded) res.end();
    await home.close();
    await http.close();
  });

  it('the timeout is TARGET_TIMEOUT with the effect started; the retry is OUTCOME_UNKNOWN because the target did not answer in time, and sends nothing', async () => {
    const { svc } = home;
    const who = session('s-timeout', [['ticket', 1]]);
    const args = { title: 'maybe created', idempotency_key: 'key-timeout-0001' };
    const first = await callOf(svc, who, 'ticket', args);
    assert.equal(first.structuredContent?.['error_code'], 'TARGET_TIMEOUT', JSON.stringify(first));
    assert.equal(first.structuredContent?.['side_effect_started'], true);
    assert.equal(http.requests.length, 1);

    const retry = await callOf(svc, who, 'ticket', args);
    const sc = retry.structuredContent ?? {};
    assert.equal(sc['error_code'], 'OUTCOME_UNKNOWN', JSON.stringify(retry));
    assert.equal(sc['required_action'], 'ask_operator');
    assert.equal(sc['side_effect_started'], null, 'the effect is unknown, never "not started"');
    assert.equal(sc['unknown_because'], 'target_timeout');
    assert.match(String(sc['message']), /the target did not answer in time/);
    assert.doesNotMatch(String(sc['message']), /daemon stopped/);
    assert.equal(http.requests.length, 1, 'nothing was sent again');

    const status = await callOf(svc, who, 'postern_call_status', { idempotency_key: 'key-timeout-0001' });
    assert.deepEqual([status.structuredContent?.['status'], status.structuredContent?.['error_code'], status.structuredContent?.['side_effect_started']], ['outcome_unknown', 'TARGET_TIMEOUT', true]);
  });
});
