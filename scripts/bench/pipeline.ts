/**
 * Benchmark: the daemon's call pipeline in-process (DESIGN §6: plan, approve,
 * journal intent, execute, redact, shape, journal outcome) against undici
 * direct on the same kept-alive loopback target, interleaved, medians — no
 * MCP, no shim, no sockets: what Postern itself adds to a call, and, through
 * the call profile (daemon/services/call-profile.ts), which phase adds it. Real vault
 * (cheap KDF), real journals with their fsyncs, the daemon's HTTP pool.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { stringify } from 'yaml';
import { parseCatalog } from '../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../src/vault/index.js';
import { openJournals } from '../../src/journal/index.js';
import { parseConfig } from '../../src/daemon/services/config.js';
import { handleCall } from '../../src/daemon/pipeline/call.js';
import { inProcessServices } from '../../src/daemon/in-process.js';
import type { Services, SessionInfo } from '../../src/daemon/pipeline/context.js';
import { systemClock } from '../../src/clock/index.js';
import { report } from './report.js';
import { loopbackTarget } from './target.js';
import { phaseFigures, phasesBetween, printPhases } from './profile.js';
import { CHEAP } from '../../test/unit/vault/helpers.js';
import { latencies, median } from './stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 300);
const TOKEN = 'bench-pipeline-token-0123456789';

const { origin, server: target } = await loopbackTarget();

const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'postern-bench-pipeline-'));
const pass = Buffer.from('bench-passphrase');
await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(TOKEN) } }), CHEAP);
const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
const catalog = parseCatalog(
  stringify({
    targets: { local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true, idempotency_header: true } } },
    tools: {
      get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target: 'local', method: 'GET', path: '/json' } }] },
      create_note: {
        description: 'Create a note.',
        effect: 'write',
        approval: 'none',
        revisions: [{ revision: 1, input: obj({ title: { type: 'string', maxLength: 100 } }, ['title']), http: { target: 'local', method: 'POST', path: '/json', body: { title: '{title}' } } }],
      },
    },
  }),
  'catalog.yaml',
);
const clock = systemClock;
const journals = openJournals(join(dir, 'journal'), { clock, exclusive: true });
const inflight = new Set<Promise<unknown>>();
const svc: Services = inProcessServices({ vault, catalog, digest: 'a'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 60', 'config.yaml'), clock }, { inflight });
const profile = svc.profile;
const session: SessionInfo = { id: 'bench', clientName: 'bench', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };

let seq = 0;
async function call(tool: string): Promise<void> {
  const args = tool === 'create_note' ? { title: 'n', idempotency_key: `bench-key-${seq++}` } : {};
  const p = handleCall(svc, session, { name: tool, arguments: args, meta: {}, signal: new AbortController().signal, progress: () => undefined });
  inflight.add(p);
  const r = (await p) as { isError?: boolean; content?: unknown };
  inflight.delete(p);
  if (r.isError === true) throw new Error(`${tool} failed: ${JSON.stringify(r.content).slice(0, 300)}`);
}
const floor = new Agent();
const direct = async (): Promise<void> => {
  const res = await request(`${origin}/json`, { headers: { authorization: `Bearer ${TOKEN}` }, dispatcher: floor });
  await res.body.json();
};

// The steady state, as in http-calls: BENCH_WARMUP calls of each kind before the rounds (a few hundred
// calls in, V8 is still compiling the call path and a call costs about twice its steady CPU).
const WARMUP = Number(process.env['BENCH_WARMUP'] ?? 1500);
for (let i = 0; i < WARMUP; i++) await call('get_json');
for (let i = 0; i < WARMUP; i++) await call('create_note');
for (let i = 0; i < WARMUP; i++) await direct();
const rows: Record<'direct' | 'read' | 'write', number[]> = { direct: [], read: [], write: [] };
// Process CPU (user + system, all threads) per call, measured around each variant's loop: the in-process
// figure beside the daemon's in `npm run bench`'s (f), without MCP, the shim or the sockets.
const cpu: Record<'direct' | 'read' | 'write', number[]> = { direct: [], read: [], write: [] };
async function cpuOf(into: number[], run: () => Promise<number[]>): Promise<number[]> {
  const c0 = process.cpuUsage();
  const r = await run();
  const c = process.cpuUsage(c0);
  into.push((c.user + c.system) / 1000 / r.length);
  if (process.env['BENCH_CPU_SPLIT'] === '1') console.log(`    user ${(c.user / 1000 / r.length).toFixed(3)} ms, system ${(c.system / 1000 / r.length).toFixed(3)} ms per call`);
  return r;
}
const before = profile.view();
for (let r = 0; r < ROUNDS; r++) {
  rows.direct.push(median(await cpuOf(cpu.direct, () => latencies(CALLS, direct))));
  rows.read.push(median(await cpuOf(cpu.read, () => latencies(CALLS, () => call('get_json')))));
  rows.write.push(median(await cpuOf(cpu.write, () => latencies(CALLS, () => call('create_note')))));
}
const after = profile.view();
journals.close();
await svc.http?.close();
await floor.close();
target.close();
rmSync(dir, { recursive: true, force: true });

const d = median(rows.direct);
const rd = median(rows.read);
const wr = median(rows.write);
const phases = phasesBetween(before, after);
console.log(`daemon pipeline in-process, ${ROUNDS} rounds × ${CALLS} calls, medians (no MCP, no shim):`);
const [cd, cr, cw] = [median(cpu.direct), median(cpu.read), median(cpu.write)];
console.log(`  undici direct, kept alive    ${d.toFixed(3)} ms   CPU ${cd.toFixed(3)} ms per call (both ends: the target is in this process)`);
console.log(`  pipeline, read tool          ${rd.toFixed(3)} ms   +${(rd - d).toFixed(3)} ms   CPU ${cr.toFixed(3)} ms per call, +${(cr - cd).toFixed(3)} ms`);
console.log(`  pipeline, write tool (key)   ${wr.toFixed(3)} ms   +${(wr - d).toFixed(3)} ms   CPU ${cw.toFixed(3)} ms per call, +${(cw - cd).toFixed(3)} ms`);
printPhases("where a call's time goes, read and write together", phases);
report(
  'pipeline',
  'daemon pipeline in-process vs undici direct',
  [
    { name: 'undici direct', value: d, unit: 'ms' },
    { name: 'pipeline read', value: rd, unit: 'ms', baseline: 'undici direct', baselineValue: d, ratio: rd / d },
    { name: 'pipeline write (key)', value: wr, unit: 'ms', baseline: 'undici direct', baselineValue: d, ratio: wr / d },
    { name: 'pipeline read CPU per call', value: cr, unit: 'ms', baseline: 'undici direct CPU per call', baselineValue: cd, ratio: cr / cd },
    { name: 'pipeline write CPU per call', value: cw, unit: 'ms', baseline: 'undici direct CPU per call', baselineValue: cd, ratio: cw / cd },
    ...phaseFigures('pipeline', phases),
  ],
);
