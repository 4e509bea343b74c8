#!/usr/bin/env node
// Runs the test suite: every test/**/*.test.ts(x) file (or those under the
// paths given) with node's test runner, in processes of their own, several
// at a time; each process's spec output is printed whole when it ends, then
// the failures, the ten slowest files and the totals.
//
// The selected files are compiled first, in one esbuild run (scripts/build-tests.mjs: a
// file and what it imports from test/ and src/ become one module under .tmp/test-build/), so
// a test process is plain `node` on one file: no loader, no transpiling module by module.
//
// An end-to-end file, or a unit file whose header says `@isolated`, runs in a
// process of its own. Other unit files run in
// groups, one process per group (scripts/test-group.mjs imports them in
// turn): a unit file's own tests take milliseconds, the start of a process
// and its imports about a second.
//
// Unit and end-to-end files run in two pools side by side: unit files are
// CPU-bound (one core each), e2e files mostly wait on the children they
// start, so more of them fit beside each other. The measured best for this
// 2-core machine is the default (docs/decisions.md, "The test suite");
// POSTERN_TEST_UNIT_JOBS and POSTERN_TEST_E2E_JOBS override it.
//
// --time-subject keeps only the files whose header says `@subject time`
// (the year-ahead pass in .ci/run). POSTERN_TEST_TIMINGS=<path> writes every
// file's time as JSON, to compare two runs.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve as resolvePath, sep } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { buildTests, testBuildDir } from './build-tests.mjs';

const args = process.argv.slice(2);
const timeOnly = args.includes('--time-subject');
const roots = args.filter((a) => !a.startsWith('--'));
if (roots.length === 0) roots.push('test');

const files = [];
function walk(p) {
  const st = statSync(p);
  if (st.isDirectory()) {
    for (const name of readdirSync(p).sort()) walk(join(p, name));
  } else if (/\.test\.tsx?$/.test(p)) {
    files.push(relative(process.cwd(), p));
  }
}
for (const r of roots) walk(r);
const selected = timeOnly ? files.filter((f) => /@subject time\b/.test(readFileSync(f, 'utf8').slice(0, 4000))) : files;
if (selected.length === 0) {
  console.error(`no test files under ${roots.join(', ')}${timeOnly ? ' whose subject is time' : ''}`);
  process.exit(1);
}

const jobs = (name, fallback) => {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
};
const isE2e = (f) => f.split(sep).includes('e2e');
const isolated = (f) => isE2e(f) || /@isolated\b/.test(readFileSync(f, 'utf8').slice(0, 4000));
/** Unit files in groups of this many per process (the rest, one process each). */
const GROUP = jobs('POSTERN_TEST_GROUP_FILES', 12);
const grouped = selected.filter((f) => !isolated(f));
const units = [];
for (let i = 0; i < grouped.length; i += GROUP) units.push(grouped.slice(i, i + GROUP));
// Longest first, so the run does not end with one slow file alone: the times of the last
// run in this checkout (.tmp/test-timings.json) when there are some, else those of a full run
// kept in the repository (test/expected-times.json: a fresh clone, as in CI, would otherwise
// start the kill-at-every-file-event files last — short files that run for a minute or more),
// else the file's size.
const HISTORY = '.tmp/test-timings.json';
const BASELINE = 'test/expected-times.json';
const timesIn = (path) => {
  try {
    return Object.fromEntries(JSON.parse(readFileSync(path, 'utf8')).files.map((f) => [f.file, f.seconds]));
  } catch {
    return {}; // no earlier run here (a fresh clone), or no baseline
  }
};
const history = { ...timesIn(BASELINE), ...timesIn(HISTORY) };
const expected = (f) => history[f] ?? statSync(f).size / 10_000;
const longestFirst = (list) => [...list].sort((a, b) => expected(b) - expected(a));
const pools = [
  { name: 'e2e', jobs: jobs('POSTERN_TEST_E2E_JOBS', 3), queue: longestFirst(selected.filter(isE2e)).map((f) => [f]) },
  { name: 'unit', jobs: jobs('POSTERN_TEST_UNIT_JOBS', 1), queue: [...selected.filter((f) => !isE2e(f) && isolated(f)).map((f) => [f]), ...units] },
];

// A test that hangs fails with its name after 8 minutes instead of stalling the run.
const TEST_TIMEOUT_MS = 480_000;
const countReporter = new URL('./test-count-reporter.mjs', import.meta.url).pathname;
const groupEntry = new URL('./test-group.mjs', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'postern-test-run-'));
const started = performance.now();
const buildDir = testBuildDir();
const built = await buildTests(selected, buildDir);
const compiledOf = (f) => built.get(f) ?? f;
/** One entry per process: its files, wall time, exit and counts. */
const results = [];
let seq = 0;

function runJob(jobFiles) {
  const name = jobFiles.length === 1 ? jobFiles[0] : `${jobFiles.length} unit files (${jobFiles[0]} … ${jobFiles.at(-1)})`;
  const countsPath = join(scratch, `${seq++}.json`);
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--enable-source-maps',
        `--test-timeout=${TEST_TIMEOUT_MS}`,
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${countReporter}`,
        `--test-reporter-destination=${countsPath}`,
        ...(jobFiles.length === 1 ? [] : [groupEntry]),
        ...jobFiles.map(compiledOf),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: process.stdout.isTTY ? '1' : '0' } },
    );
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => out.push(d));
    const timer = setTimeout(() => {
      out.push(Buffer.from(`\n${name}: still running after ${(TEST_TIMEOUT_MS + 60_000) / 1000} s: killed\n`));
      child.kill('SIGKILL');
    }, TEST_TIMEOUT_MS + 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let report = null;
      try {
        report = JSON.parse(readFileSync(countsPath, 'utf8'));
      } catch {
        // no report: the process died before its reporter finished; a failed job
      }
      const r = { name, files: jobFiles, seconds: (performance.now() - t0) / 1000, ok: code === 0 && report !== null, code, signal, report };
      results.push(r);
      process.stdout.write(Buffer.concat(out));
      process.stdout.write(`${r.ok ? '✔' : '✖'} ${name} (${r.seconds.toFixed(1)} s)\n\n`);
      resolve();
    });
  });
}

// Each pool's workers take their own pool's jobs first, then help with the others' (a unit
// worker whose queue is empty runs e2e files), so no slot idles while work is left.
const next = (pool) => pool.queue.shift() ?? pools.find((p) => p.queue.length > 0)?.queue.shift();
const workers = pools.flatMap((pool) =>
  Array.from({ length: pool.jobs }, async () => {
    for (let j = next(pool); j !== undefined; j = next(pool)) await runJob(j);
  }),
);
await Promise.all(workers);
rmSync(scratch, { recursive: true, force: true });
rmSync(buildDir, { recursive: true, force: true });

const total = (performance.now() - started) / 1000;
const sum = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
for (const r of results) for (const k of Object.keys(sum)) sum[k] += r.report?.counts?.[k] ?? 0;
// A file's time: the wall time of its own process, or (grouped) the time of its tests.
const perFile = results.flatMap((r) =>
  r.files.length === 1
    ? [{ file: r.files[0], seconds: r.seconds, ok: r.ok, how: 'process' }]
    : r.files.map((f) => ({ file: f, seconds: (r.report?.files?.[resolvePath(f)] ?? 0) / 1000, ok: r.ok, how: 'grouped' })),
);
perFile.sort((a, b) => b.seconds - a.seconds);
const failed = results.filter((r) => !r.ok);
const lines = ['', `slowest test files (${pools.map((p) => `${p.name}: ${p.jobs} process${p.jobs === 1 ? '' : 'es'} at a time`).join(', ')}; unit files in groups of ${GROUP}, timed by their tests):`];
for (const r of perFile.slice(0, 10)) lines.push(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.file}${r.how === 'grouped' ? ' (grouped)' : ''}`);
if (failed.length > 0) {
  lines.push('', `failed (${failed.length}):`);
  for (const r of failed) lines.push(`  ${r.name} (exit ${r.code ?? r.signal}${r.report === null ? ', no report: it did not finish' : ''})`);
}
lines.push(
  '',
  `files ${perFile.length} in ${results.length} processes · tests ${sum.tests} · pass ${sum.pass} · fail ${sum.fail} · cancelled ${sum.cancelled} · skipped ${sum.skipped} · todo ${sum.todo} · total ${total.toFixed(1)} s`,
);
console.log(lines.join('\n'));
const record = `${JSON.stringify({ total, counts: sum, files: perFile, processes: results.map(({ name, seconds, ok }) => ({ name, seconds, ok })) }, null, 2)}\n`;
const timings = process.env['POSTERN_TEST_TIMINGS'];
if (timings !== undefined && timings !== '') writeFileSync(timings, record);
if (roots.length === 1 && roots[0] === 'test' && !timeOnly) {
  mkdirSync('.tmp', { recursive: true });
  writeFileSync(HISTORY, record);
}
process.exit(failed.length === 0 ? 0 : 1);
