/**
 * Output contracts under drift (issue 12 item 3; seed 000 rows 5–6, seed 001
 * "Respuesta v2 para un consumidor v1"), end to end: a real MCP client lists
 * revision 1 once and keeps planning against it (its SDK validates every
 * success against the output schema it listed) while the operator accepts
 * newer revisions; a real loopback HTTP service answers. An added output field
 * reaches the v1 consumer; a result without the identifier the v1 contract
 * promises is OUTPUT_CONTRACT_MISMATCH (the effect happened, the field is
 * named, journaled as the outcome); an output adapter gives `{issueId}` to the
 * v1 consumer as `{id}` and the journal records the steps. Catalogs accepted
 * with `--force` over `semantic_change_keeps_name` or an output-breaking change
 * are refused at call time before any effect: the service's request log stays
 * empty for them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer, RouteHandler } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { openJournals, type CallView } from '../../src/journal/index.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const str = { type: 'string', maxLength: 200 };
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });

describe('daemon: output contracts while sessions run', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let v1: Client; // lists revision 1 once and never again
  let events: EventWatch;
  let targets: Record<string, unknown>;
  /** What the service answers to the next POST /issues. */
  let answer: unknown = {};

  const input = obj({ title: str }, ['title']);
  const action = (path: string) => ({ target: 'local', method: 'POST', path, body: { title: '{title}' } });
  const out1 = obj({ id: str, url: str }, ['id', 'url']);
  const r1 = { revision: 1, input, http: action('/issues'), output: out1 };
  // r2: an output field added (additive; no policy needed).
  const r2 = { revision: 2, input, http: action('/issues'), output: obj({ id: str, url: str, labels: { type: 'array', items: str } }, ['id', 'url']) };
  // r3: the service now says issueId; an output adapter gives it back to r2 (and so r1) readers as id.
  const out3 = obj({ issueId: str, url: str, labels: { type: 'array', items: str } }, ['issueId', 'url']);
  const r3 = { revision: 3, input, http: action('/issues'), output: out3, previous: { policy: 'adapt', output: { renames: { issueId: 'id' } } } };
  // r4: a declared change of meaning on the same name (the gate says: new tool name).
  const r4 = { ...r3, revision: 4, semantic_change: 'title now names the epic, not the issue', previous: 'adapt' };

  // A second tool whose r2 drops the identifier with an input-only adapt (the gate says: output_breaking_with_adapt).
  const g1 = { revision: 1, input, http: action('/lookup'), output: out1 };
  const g2 = { revision: 2, input, http: action('/lookup'), output: obj({ url: str }, ['url']), previous: 'adapt' };

  const catalog = (issue: unknown[], lookup: unknown[] = [g1]) => ({
    targets,
    tools: {
      create_issue: { description: 'Create an issue.', effect: 'write', approval: 'none', revisions: issue },
      lookup_issue: { description: 'Look an issue up.', effect: 'read', approval: 'none', revisions: lookup },
    },
  });

  const call = async (c: Client, name: string, args: Record<string, unknown>): Promise<Result> => (await c.callTool({ name, arguments: args })) as Result;
  function journaled(k: string): CallView | undefined {
    const j = openJournals(join(inst.sb.home, 'journal'), { readonly: true });
    try {
      return j.activity.listCalls({ idempotency_key: k, limit: 10 })[0];
    } finally {
      j.close();
    }
  }
  async function accept(c: unknown, sequence: number): Promise<void> {
    await inst.acceptCatalog(c);
    await events.next('catalog.adopted', (e) => e.catalog.sequence === sequence);
  }

  before(async () => {
    const answering: RouteHandler = (_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    };
    ({ http, inst } = await httpFixture({ token: canary('tok'), routes: { '/issues': answering, '/lookup': answering }, catalog: (t) => ((targets = t), catalog([r1])) }));
    events = await watchEvents(() => inst.operator());
    v1 = await inst.client({ name: 'v1-consumer' });
    const { tools } = await v1.listTools();
    assert.equal(tools.find((t) => t.name === 'create_issue')?._meta?.['dev.postern/revision'], 1);
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  it('seed 000 row 5 "Añadir un campo de salida": r2 adds labels → the v1 consumer\'s call runs and its result validates', async () => {
    await accept(catalog([r1, r2]), 2);
    answer = { id: 'I-1', url: 'https://tracker.test/I-1', labels: ['bug'] };
    const before = http.requests.length;
    const r = await call(v1, 'create_issue', { title: 'added field', idempotency_key: key() });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent?.['body'], answer);
    assert.equal(r.structuredContent?.['result_revision'], 2);
    assert.equal(r._meta?.['dev.postern/output_adapted'], undefined);
    assert.equal(http.requests.length, before + 1);
  });

  it('seed 000 row 6 "Eliminar un identificador de salida": a result without the id the v1 contract promises → OUTPUT_CONTRACT_MISMATCH, effect happened, field named, journaled', async () => {
    answer = { url: 'https://tracker.test/I-2' };
    const before = http.requests.length;
    const k = key();
    const r = await call(v1, 'create_issue', { title: 'no id', idempotency_key: k });
    const sc = r.structuredContent ?? {};
    assert.equal(r.isError, true);
    assert.deepEqual(
      [sc['error_code'], sc['side_effect_started'], sc['field'], sc['expected'], sc['planned_revision'], sc['current_revision'], sc['required_action']],
      ['OUTPUT_CONTRACT_MISMATCH', true, 'body.id', 'is required', 1, 2, 'refresh_tool_list_and_do_not_repeat'],
    );
    assert.equal(typeof sc['call_id'], 'string');
    assert.equal(http.requests.length, before + 1, 'the effect happened once');
    const j = journaled(k);
    assert.deepEqual([j?.status, j?.outcome?.error_code, j?.outcome?.side_effect_started, j?.call.call_id], ['error', 'OUTPUT_CONTRACT_MISMATCH', true, sc['call_id']]);
    // The same key is answered from the journal: nothing runs again.
    const again = await call(v1, 'create_issue', { title: 'no id', idempotency_key: k });
    assert.equal(again.structuredContent?.['error_code'], 'OUTPUT_CONTRACT_MISMATCH');
    assert.equal(http.requests.length, before + 1);
  });

  it('seed 001 row "Respuesta v2 para un consumidor v1", adapted: under r3 the service says {issueId}; the v1 consumer receives {id}, _meta and the journal say how', async () => {
    await accept(catalog([r1, r2, r3]), 3);
    answer = { issueId: 'I-3', url: 'https://tracker.test/I-3' };
    const k = key();
    const r = await call(v1, 'create_issue', { title: 'renamed', idempotency_key: k });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent?.['body'], { id: 'I-3', url: 'https://tracker.test/I-3' });
    assert.equal(r.structuredContent?.['result_revision'], 3);
    assert.deepEqual(r._meta?.['dev.postern/output_adapted'], { from_revision: 3, to_revision: 1, steps: ['r3→r2: renamed issueId → id'] });
    assert.equal(r._meta?.['dev.postern/revision'], 3);
    const j = journaled(k);
    assert.deepEqual([j?.status, j?.call.revision_seen, j?.call.revision_executed, j?.outcome?.output_adapter], ['success', 1, 3, 'r3→r2: renamed issueId → id']);
    const shown = await inst.sb.run(['audit', 'show', String(j?.call.call_id)]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /output adapter\s+r3→r2: renamed issueId → id/);
    // A consumer that lists r3 gets the result as the service said it.
    const fresh = await inst.client({ name: 'v3-consumer' });
    await fresh.listTools();
    const now = await call(fresh, 'create_issue', { title: 'current', idempotency_key: key() });
    assert.deepEqual(now.structuredContent?.['body'], { issueId: 'I-3', url: 'https://tracker.test/I-3' });
    assert.equal(now._meta?.['dev.postern/output_adapted'], undefined);
  });

  it('--force over output_breaking_with_adapt: the v1 plan of lookup_issue is refused before any effect (CONTRACT_STALE); the request log stays empty', async () => {
    const forced = catalog([r1, r2, r3], [g1, g2]);
    await writeFile(join(inst.sb.home, 'catalog.yaml'), stringify(forced));
    const check = await inst.sb.run(['catalog', 'check', '--json']);
    assert.equal(check.code, 1);
    const report = JSON.parse(check.stdout) as { failures: { rule: string; tool: string }[] };
    assert.deepEqual(report.failures.map((f) => [f.rule, f.tool]), [['output_breaking_with_adapt', 'lookup_issue']]);
    await accept(forced, 4);
    const before = http.requests.length;
    const r = await call(v1, 'lookup_issue', { title: 'I-1' });
    const sc = r.structuredContent ?? {};
    assert.deepEqual([sc['error_code'], sc['side_effect_started'], sc['required_action'], sc['current_revision'], sc['reason']], ['CONTRACT_STALE', false, 'refresh_tool_list', 2, 'output_incompatible']);
    assert.equal(http.requests.length, before, 'nothing was sent');
    assert.equal(http.requests.filter((q) => q.url.startsWith('/lookup')).length, 0);
  });

  it('--force over semantic_change_keeps_name: the v1 plan of create_issue is refused before any effect; a client that lists again runs the new meaning', async () => {
    const forced = catalog([r1, r2, r3, r4], [g1, g2]);
    await writeFile(join(inst.sb.home, 'catalog.yaml'), stringify(forced));
    const check = await inst.sb.run(['catalog', 'check', '--json']);
    assert.equal(check.code, 1);
    assert.ok((JSON.parse(check.stdout) as { failures: { rule: string }[] }).failures.some((f) => f.rule === 'semantic_change_keeps_name'));
    await accept(forced, 5);
    const before = http.requests.length;
    const r = await call(v1, 'create_issue', { title: 'old meaning', idempotency_key: key() });
    const sc = r.structuredContent ?? {};
    assert.deepEqual([sc['error_code'], sc['side_effect_started'], sc['required_action'], sc['current_revision'], sc['reason']], ['CONTRACT_STALE', false, 'refresh_tool_list', 4, 'semantic_change']);
    assert.equal(http.requests.length, before, 'nothing was sent');
    await v1.listTools();
    answer = { issueId: 'E-1', url: 'https://tracker.test/E-1' };
    const relisted = await call(v1, 'create_issue', { title: 'new meaning', idempotency_key: key() });
    assert.equal(relisted.isError, undefined, JSON.stringify(relisted));
    assert.equal(http.requests.length, before + 1);
  });
});
