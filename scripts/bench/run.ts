/**
 * `npm run bench`: every benchmark part (scripts/bench/*.ts) as its own child
 * process, one after another, with BENCH_OUT set to a temporary directory
 * where each part's `report()` (report.ts) writes its figures. The parts'
 * own lines pass through; then one table (part, figure, value, baseline,
 * ratio, target) is printed and the whole run — with the machine, the load
 * average before and after each part and the disk's fdatasync latency — is
 * written as JSON to `bench-results.json` in the repository (or $BENCH_JSON).
 *
 * The round counts below keep the whole run under 5 minutes on a 2-core
 * machine; a variable set in the environment (BENCH_ROUNDS, BENCH_CALLS…)
 * wins over them, for every part (small counts while developing).
 * BENCH_PARTS=rss,vault-unlock runs only those parts. Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import type { PartReport } from './report.js';
import { median } from './stats.js';

const ROOT = resolve(import.meta.dirname, '../..');
const clock = systemClock;
/** The whole run should finish within this on a 2-core machine. */
const BUDGET_S = 300;

interface Part {
  readonly part: string;
  /** Round counts for this part, unless the environment sets them. */
  readonly env: Readonly<Record<string, string>>;
}
const PARTS: readonly Part[] = [
  { part: 'redaction', env: { BENCH_ROUNDS: '15' } },
  { part: 'ssh', env: {} },
  { part: 'anchor', env: { BENCH_ROUNDS: '5', BENCH_CALLS: '200' } },
  { part: 'ship', env: { BENCH_ROUNDS: '3', BENCH_CALLS: '2000' } },
  { part: 'vault-unlock', env: { BENCH_ROUNDS: '3' } },
  { part: 'shim-start', env: { BENCH_ROUNDS: '15' } },
  { part: 'tools-list', env: { BENCH_ROUNDS: '5', BENCH_LISTS: '40' } },
  { part: 'pipeline', env: { BENCH_ROUNDS: '5', BENCH_CALLS: '300' } },
  { part: 'journal-writer', env: { BENCH_ROUNDS: '5', BENCH_CALLS: '800' } },
  { part: 'http-executor', env: { BENCH_ROUNDS: '15', BENCH_CALLS: '600' } },
  { part: 'http-calls', env: { BENCH_ROUNDS: '5', BENCH_CALLS: '100' } },
  { part: 'rss', env: { BENCH_RSS_CALLS: '10000', BENCH_RSS_INFLIGHT: '8' } },
];

if (!existsSync(join(ROOT, 'dist/cli/main.js'))) {
  console.error('npm run bench: dist/ is missing; run `npm run build` first (the parts start the built daemon and `postern mcp`).');
  process.exit(2);
}
const only = (process.env['BENCH_PARTS'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
const unknown = only.filter((p) => !PARTS.some((q) => q.part === p));
if (unknown.length > 0) {
  console.error(`npm run bench: unknown part ${unknown.join(', ')} in BENCH_PARTS (parts: ${PARTS.map((p) => p.part).join(', ')}).`);
  process.exit(2);
}
const parts = only.length === 0 ? PARTS : PARTS.filter((p) => only.includes(p.part));

const load1 = (): number => Number(loadavg()[0]!.toFixed(2));

/** Median latency of writing 4 KiB and fdatasync, 50 times, in the directory the parts' homes live in. */
function fdatasyncMs(dir: string): number {
  const file = join(dir, 'fdatasync.probe');
  const fd = openSync(file, 'w', 0o600);
  const block = Buffer.alloc(4096, 0x61);
  const times: number[] = [];
  try {
    for (let i = 0; i < 50; i++) {
      const t0 = clock.monotonicMs();
      writeSync(fd, block, 0, block.length, 0);
      fdatasyncSync(fd);
      times.push(clock.monotonicMs() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return median(times);
}

interface PartRun {
  readonly part: string;
  readonly script: string;
  readonly exit_code: number | null;
  readonly seconds: number;
  readonly load_before: number;
  readonly load_after: number;
  readonly report: PartReport | null;
}

function runPart(p: Part, out: string, fsync: number): Promise<PartRun> {
  const script = `scripts/bench/${p.part}.ts`;
  const load_before = load1();
  const t0 = clock.monotonicMs();
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT,
      env: { ...p.env, ...process.env, BENCH_OUT: out, BENCH_FDATASYNC_MS: fsync.toFixed(3) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const finish = (code: number | null): void => {
      const file = join(out, `${p.part}.json`);
      const report = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as PartReport) : null;
      done({ part: p.part, script, exit_code: code, seconds: (clock.monotonicMs() - t0) / 1000, load_before, load_after: load1(), report });
    };
    child.once('error', () => finish(null));
    child.once('exit', (code) => finish(code));
  });
}

const num = (x: number): string => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
const withUnit = (x: number, unit: string): string => `${num(x)} ${unit}`;

function table(runs: readonly PartRun[]): string {
  const head = ['part', 'figure', 'value', 'baseline', 'ratio', 'target'];
  const rows: string[][] = [];
  for (const r of runs) {
    if (r.report === null) {
      rows.push([r.part, `failed (exit ${r.exit_code ?? 'error'}): no figures`, '', '', '', '']);
      continue;
    }
    for (const f of r.report.figures) {
      rows.push([
        r.part,
        f.name,
        withUnit(f.value, f.unit),
        f.baseline === undefined ? '' : `${f.baseline}${f.baselineValue === undefined ? '' : ` ${withUnit(f.baselineValue, f.unit)}`}`,
        f.ratio === undefined ? '' : `${f.ratio.toFixed(2)}×`,
        f.target ?? '',
      ]);
    }
  }
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 2 || i === 4 ? c.padStart(width[i]!) : c.padEnd(width[i]!))).join('  ').trimEnd();
  return [line(head), width.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const out = mkdtempSync(join(tmpdir(), 'postern-bench-'));
const started = clock.now();
const t0 = clock.monotonicMs();
const fsync = fdatasyncMs(out);
const cpu = cpus();
const machine = {
  cpus: cpu.length,
  model: cpu[0]?.model ?? 'unknown',
  total_memory_bytes: totalmem(),
  node: process.version,
  platform: `${process.platform} ${release()}`,
  fdatasync_4k_ms_median: Number(fsync.toFixed(3)),
};
console.log(`npm run bench: ${parts.length} parts on ${machine.cpus} × ${machine.model}, ${(machine.total_memory_bytes / 2 ** 30).toFixed(1)} GiB, Node ${machine.node}; fdatasync of 4 KiB ${fsync.toFixed(2)} ms (median of 50); load ${load1()}`);

const runs: PartRun[] = [];
for (const [i, p] of parts.entries()) {
  console.log(`\n── ${i + 1}/${parts.length} ${p.part} (load ${load1()})`);
  const r = await runPart(p, out, fsync);
  runs.push(r);
  console.log(`── ${p.part}: ${r.report === null ? `FAILED (exit ${r.exit_code ?? 'error'})` : 'done'} in ${r.seconds.toFixed(1)} s, load ${r.load_before} → ${r.load_after}`);
}
rmSync(out, { recursive: true, force: true });
const seconds = (clock.monotonicMs() - t0) / 1000;

console.log(`\nnpm run bench: medians of interleaved rounds; ratio = value / baseline, both measured in this run (${seconds.toFixed(0)} s in all)\n`);
console.log(table(runs));
for (const r of runs) for (const n of r.report?.notes ?? []) console.log(`  ${r.part}: ${n}`);

const json = process.env['BENCH_JSON'] ?? join(ROOT, 'bench-results.json');
const result = {
  started_at: started.toISOString(),
  seconds: Number(seconds.toFixed(1)),
  budget_seconds: BUDGET_S,
  machine,
  parts: runs.map((r) => ({
    part: r.part,
    script: r.script,
    exit_code: r.exit_code,
    seconds: Number(r.seconds.toFixed(1)),
    load_before: r.load_before,
    load_after: r.load_after,
    ...(r.report === null ? {} : { title: r.report.title, figures: r.report.figures, notes: r.report.notes ?? [] }),
  })),
};
writeFileSync(json, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwritten: ${json}`);
if (seconds > BUDGET_S) console.error(`npm run bench: took ${seconds.toFixed(0)} s, over the ${BUDGET_S} s budget (load ${load1()}); lower the round counts in scripts/bench/run.ts`);
const failed = runs.filter((r) => r.report === null || r.exit_code !== 0);
if (failed.length > 0) {
  console.error(`npm run bench: ${failed.map((r) => r.part).join(', ')} failed`);
  process.exitCode = 1;
}
