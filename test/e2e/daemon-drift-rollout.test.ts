// @subject time: deprecation and drain windows (run again a year ahead by .ci/run)
/**
 * The rollout lifecycle end to end (seed 004 "Rollout en tres fases", seed 000
 * telemetry): real MCP clients over `postern mcp` against the built daemon, a
 * real HTTP target on loopback. Deprecation is announced on the wire
 * (tools/list `_meta`, result `_meta`); `postern audit revisions` counts who
 * still calls each revision; `catalog check --against-journal` revalidates
 * the journaled calls of a write tool; retiring a revision used within the
 * window is warned about; a canary revision is shown to its share of new
 * sessions while the others stay pinned to the previous revision; a pending
 * catalog run in shadow plans each live call too, and its divergence is gated.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { canaryBucket } from '../../src/contracts/index.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
const key = (): string => `key-${randomBytes(8).toString('hex')}`;
const obj = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const id = { type: 'string', maxLength: 40 };

describe('daemon: the rollout lifecycle (seed 004: shadow → canary → deprecation)', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let old: Client; // listed revision 1 and never lists again
  let fresh: Client; // lists after revision 2 is accepted
  let events: EventWatch;
  let targets: Record<string, unknown>;
  const r1 = { revision: 1, input: obj({ pedido_id: id }, ['pedido_id']), http: { target: 'local', method: 'POST', path: '/echo', body: { pedido_id: '{pedido_id}' } } };
  const r2 = {
    revision: 2,
    input: obj({ pedido_id: id, canal: { enum: ['web', 'tienda'] } }, ['pedido_id', 'canal']),
    http: { target: 'local', method: 'POST', path: '/echo', body: { pedido_id: '{pedido_id}', canal: '{canal}' } },
    previous: { policy: 'adapt', defaults: { canal: 'web' } },
  };
  const catalog = (revisions: unknown[]) => ({
    targets,
    tools: { buscar_pedido: { description: 'Look an order up.', effect: 'write', approval: 'none', revisions } },
  });
  const call = async (c: Client, args: Record<string, unknown>): Promise<Result> => (await c.callTool({ name: 'buscar_pedido', arguments: { ...args, idempotency_key: key() } })) as Result;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: canary('tok'), catalog: (t) => ((targets = t), catalog([r1])) }));
    events = await watchEvents(() => inst.operator());
    old = await inst.client({ name: 'old-agent' });
    await old.listTools();
    assert.equal((await call(old, { pedido_id: 'P-1' })).isError, undefined);
  });
  after(async () => {
    events.close();
    await inst.cleanup();
    await http.close();
  });

  it('phase 3 "Deprecación con fecha": tools/list announces the deprecated revision with its date and replacement', async () => {
    await inst.acceptCatalog(catalog([{ ...r1, deprecated: '2026-10-01' }, r2]));
    await events.next('catalog.adopted', (e) => e.catalog.sequence === 2);
    fresh = await inst.client({ name: 'fresh-agent' });
    const { tools } = await fresh.listTools();
    const t = tools.find((x) => x.name === 'buscar_pedido');
    assert.equal(t?._meta?.['dev.postern/revision'], 2);
    assert.deepEqual(t?._meta?.['dev.postern/deprecated_revisions'], [{ revision: 1, deprecated: '2026-10-01', current_revision: 2, replacement: { revision: 2 } }]);
  });

  it('a result served to a consumer on the deprecated revision carries the notice; the current consumer gets none', async () => {
    const before = http.requests.length;
    const stale = await call(old, { pedido_id: 'P-2' });
    assert.equal(stale.isError, undefined, JSON.stringify(stale));
    assert.equal(stale.structuredContent?.['result_revision'], 2);
    assert.deepEqual(stale._meta?.['dev.postern/deprecation'], { revision: 1, deprecated: '2026-10-01', current_revision: 2, replacement: { revision: 2 } });
    const current = await call(fresh, { pedido_id: 'P-3', canal: 'tienda' });
    assert.equal(current.isError, undefined, JSON.stringify(current));
    assert.equal(current._meta?.['dev.postern/deprecation'], undefined);
    assert.equal(current._meta?.['dev.postern/revision'], 2);
    assert.equal(http.requests.length, before + 2);
  });

  it('a refused call on the deprecated revision is told too, and nothing is sent', async () => {
    const before = http.requests.length;
    const bad = await call(old, { pedido_id: 'P-4', extra: 1 });
    assert.equal(bad.structuredContent?.['error_code'], 'VALIDATION_FAILED');
    assert.equal((bad._meta?.['dev.postern/deprecation'] as { revision?: number } | undefined)?.revision, 1);
    assert.equal(http.requests.length, before);
  });

  type Usage = { tool: string; revision: number | null; status: string; deprecated: string | null; counts: Record<string, number>; last_seen: string | null; live_sessions: number };

  it('"los logs cuentan quién la sigue llamando": audit revisions counts each planned revision and the live sessions on it', async () => {
    const r = await inst.sb.run(['audit', 'revisions', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { format: string; revisions: Usage[] };
    assert.equal(out.format, 'postern.audit-revisions/1');
    const r1 = out.revisions.find((x) => x.tool === 'buscar_pedido' && x.revision === 1);
    const r2 = out.revisions.find((x) => x.tool === 'buscar_pedido' && x.revision === 2);
    assert.deepEqual([r1?.status, r1?.deprecated, r1?.live_sessions], ['deprecated', '2026-10-01', 1]);
    assert.deepEqual(r1?.counts, { current: 1, adapted: 1, pinned: 0, migrated: 0, rejected: 1, replayed: 0, human_handled: 0 });
    assert.deepEqual([r2?.status, r2?.counts['current'], r2?.live_sessions], ['current', 1, 1]);
    const table = await inst.sb.run(['audit', 'revisions', '--tool', 'buscar_pedido']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^TOOL\s+REV\s+STATUS/);
    assert.match(table.stdout, /buscar_pedido\s+1\s+deprecated 2026-10-01\s+1\s+1\s+0\s+0\s+1\s+0\s+0\s+\S+ \S+\s+1/);
  });

  it('catalog check warns (and passes) when the candidate retires a revision called within the window', async () => {
    const file = join(inst.sb.home, 'retire.yaml');
    await writeFile(file, stringify(catalog([{ ...r1, deprecated: '2026-10-01', retired: {} }, r2])));
    const r = await inst.sb.run(['catalog', 'check', file]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /warning: buscar_pedido r1 is retired by this catalog but had 3 calls in the last 7d .*1 live session is on it/);
    const j = await inst.sb.run(['catalog', 'check', file, '--json', '--window', '36h']);
    const report = JSON.parse(j.stdout) as { ok: boolean; retired_in_use: { window: string; revisions: { tool: string; revision: number; calls: number }[] } };
    assert.equal(report.ok, true);
    assert.deepEqual([report.retired_in_use.window, report.retired_in_use.revisions.map((x) => [x.tool, x.revision, x.calls])], ['36h', [['buscar_pedido', 1, 3]]]);
    const bad = await inst.sb.run(['catalog', 'check', file, '--window', 'soon']);
    assert.equal(bad.code, 2, bad.stderr);
  });

  it('"la prueba del log histórico" on a write tool: journaled calls (with their idempotency_key) are revalidated against the candidate', async () => {
    const before = http.requests.length;
    assert.equal((await call(fresh, { pedido_id: '77', canal: 'web' })).isError, undefined);
    assert.equal(http.requests.length, before + 1);
    const file = join(inst.sb.home, 'tighter.yaml');
    const r3 = { ...r2, revision: 3, input: obj({ pedido_id: { ...id, pattern: '^P-' }, canal: { enum: ['web', 'tienda'] } }, ['pedido_id', 'canal']), previous: { policy: 'adapt' } };
    await writeFile(file, stringify(catalog([{ ...r1, deprecated: '2026-10-01' }, r2, r3])));
    const r = await inst.sb.run(['catalog', 'check', file, '--against-journal', '--json']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const report = JSON.parse(r.stdout) as { historical: { checked: number; passed: number; skipped_invalid: number; skipped: Record<string, number> }; historical_failures: { tool: string; revision: number; problem: string }[]; failures: { rule: string }[] };
    // 5 calls: P-1 (r1), P-2 (r1, adapted), P-3 (r2), P-4 (refused: never valid), 77 (r2).
    assert.deepEqual([report.historical.checked, report.historical.passed, report.historical.skipped_invalid], [5, 3, 1]);
    assert.deepEqual(report.historical.skipped, { never_valid: 1, built_in: 0, invalid_key: 0, invalid_before: 0 });
    assert.deepEqual(report.historical_failures.map((f) => [f.tool, f.revision]), [['buscar_pedido', 2]]);
    assert.match(report.historical_failures[0]?.problem ?? '', /pedido_id/);
    assert.ok(report.failures.some((f) => f.rule === 'historical_call_fails'));
    const text = await inst.sb.run(['catalog', 'check', file, '--against-journal']);
    assert.match(text.stdout, /not revalidated: 1 refused as invalid when it was made/);
  });

  it('phase 2 "Canary": a share of new sessions is shown the new revision; the others and the old sessions stay pinned to their plan', async () => {
    const r3 = { ...r2, revision: 3, http: { ...r2.http, body: { ...r2.http.body, via: 'canary' } }, previous: { policy: 'pin' }, canary: { sessions_percent: 50 } };
    await inst.acceptCatalog(catalog([{ ...r1, deprecated: '2026-10-01' }, r2, r3]));
    await events.next('catalog.adopted', (e) => e.catalog.sequence === 3);
    const op = await inst.operator();
    // Which cohort a session is in is a function of its id (not known in advance): open sessions until both are seen.
    const seen = new Map<boolean, { client: Client; shown: unknown }>();
    try {
      for (let i = 0; i < 16 && seen.size < 2; i++) {
        const c = await inst.client({ name: `cohort-${i}` });
        const { tools } = await c.listTools();
        const shown = tools.find((t) => t.name === 'buscar_pedido')?._meta?.['dev.postern/revision'];
        const session = (await op.request('sessions.list', {})).find((x) => x.client_name === `cohort-${i}`);
        assert.ok(session, 'the session is journaled once it listed');
        const canary = canaryBucket('buscar_pedido', session.id) < 50;
        assert.equal(shown, canary ? 3 : 2, `session ${session.id} is ${canary ? 'in' : 'outside'} the canary`);
        if (!seen.has(canary)) seen.set(canary, { client: c, shown });
        else await c.close();
      }
    } finally {
      op.close();
    }
    assert.equal(seen.size, 2, 'both cohorts were seen');
    const body = (n: number): Record<string, unknown> => JSON.parse(http.requests[n]!.body.toString('utf8')) as Record<string, unknown>;
    const before = http.requests.length;
    const inside = await call(seen.get(true)!.client, { pedido_id: 'P-5', canal: 'web' });
    assert.equal(inside.structuredContent?.['result_revision'], 3);
    assert.equal(body(before)['via'], 'canary');
    const outside = await call(seen.get(false)!.client, { pedido_id: 'P-6', canal: 'web' });
    assert.equal(outside.structuredContent?.['result_revision'], 2);
    assert.equal(body(before + 1)['via'], undefined);
    // Sessions that listed before the canary keep their plan: r1 is carried to r2 and pinned there.
    const stale = await call(old, { pedido_id: 'P-7' });
    assert.equal(stale.structuredContent?.['result_revision'], 2);
    assert.deepEqual(body(before + 2), { pedido_id: 'P-7', canal: 'web' });
    const r = await inst.sb.run(['audit', 'revisions', '--json', '--tool', 'buscar_pedido']);
    const rows = (JSON.parse(r.stdout) as { revisions: Usage[] }).revisions;
    assert.equal(rows.find((x) => x.revision === 3)?.counts['current'], 1);
    assert.ok((rows.find((x) => x.revision === 2)?.counts['pinned'] ?? 0) >= 1);
    assert.ok((rows.find((x) => x.revision === 1)?.counts['pinned'] ?? 0) >= 1);
    cohorts = seen;
  });

  let cohorts = new Map<boolean, { client: Client; shown: unknown }>();

  it('phase 1 "Shadow": a pending catalog plans every live call too, with no effect; check --shadow reports the divergence and fails above 1%', async () => {
    const r3 = { ...r2, revision: 3, http: { ...r2.http, body: { ...r2.http.body, via: 'canary' } }, previous: { policy: 'pin' } };
    const r4 = { ...r3, revision: 4, http: { ...r3.http, body: { ...r3.http.body, via: 'r4' } }, previous: { policy: 'adapt' } };
    const text = stringify(catalog([{ ...r1, deprecated: '2026-10-01' }, r2, r3, r4]));
    await writeFile(join(inst.sb.home, 'catalog.yaml'), text);
    const g = ['--passphrase-file', inst.passFile];
    const start = await inst.sb.run(['catalog', 'shadow', 'start', ...g]);
    assert.equal(start.code, 0, start.stdout + start.stderr);
    assert.match(start.stdout, /runs in shadow/);
    const before = http.requests.length;
    // Planned against r3 (the canary): the candidate would carry it to r4, another request.
    const inside = await call(cohorts.get(true)!.client, { pedido_id: 'P-8', canal: 'web' });
    assert.equal(inside.structuredContent?.['result_revision'], 3);
    // Planned against r2: pinned there by both catalogs, the same request.
    const outside = await call(cohorts.get(false)!.client, { pedido_id: 'P-9', canal: 'web' });
    assert.equal(outside.structuredContent?.['result_revision'], 2);
    assert.equal(http.requests.length, before + 2, 'the shadow sent nothing');
    assert.ok(http.requests.slice(before).every((q) => !q.body.toString('utf8').includes('"r4"')), 'no request of the candidate left the machine');
    const r = await inst.sb.run(['catalog', 'check', '--shadow', '--json']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const shadow = (JSON.parse(r.stdout) as { shadow: { shadowed: number; ok: boolean; tools: { tool: string; shadowed: number; divergent: number; verdicts: Record<string, number>; ok: boolean }[] } }).shadow;
    assert.deepEqual([shadow.shadowed, shadow.ok], [2, false]);
    assert.deepEqual(shadow.tools.map((t) => [t.tool, t.shadowed, t.divergent, t.verdicts['other_request'], t.verdicts['same'], t.ok]), [['buscar_pedido', 2, 1, 1, 1, false]]);
    const table = await inst.sb.run(['catalog', 'check', '--shadow']);
    assert.equal(table.code, 1);
    assert.match(table.stdout, /buscar_pedido\s+2\s+1\s+50\.0%/);
    assert.match(table.stderr, /shadow diverged on more than 1% of calls for buscar_pedido/);
    const stop = await inst.sb.run(['catalog', 'shadow', 'stop', ...g]);
    assert.equal(stop.code, 0, stop.stderr);
    // It says what it stopped; only a stop with no shadow running says there was none.
    assert.match(stop.stdout, /^stopped the shadow of catalog [0-9a-f]{16}…$/m, stop.stdout);
    const again = await inst.sb.run(['catalog', 'shadow', 'stop', ...g]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /no catalog was running in shadow: nothing to stop/);
    await call(cohorts.get(false)!.client, { pedido_id: 'P-10', canal: 'web' });
    const after = JSON.parse((await inst.sb.run(['catalog', 'check', '--shadow', '--json'])).stdout) as { shadow: { shadowed: number } };
    assert.equal(after.shadow.shadowed, 2, 'no call is shadowed once it stopped');
  });
});
