#!/usr/bin/env node
// `npm test`: build, then the type-check and the lint beside the tests (the
// tests need only the build; the checks need only the sources, and the tests
// spend much of their time waiting on the processes they start), then a line
// with each phase's time. The checks' output is printed when they end; any
// failing phase fails the run. NPM_TEST_SEQUENTIAL=1 runs the phases one
// after another (build, typecheck, lint, tests), stopping at the first failure.
// NPM_TEST_CHECKS_PASSED=1 says the type-check and the lint already passed on
// this checkout (`.ci/run` runs them beside the native build of better-sqlite3,
// where a core is otherwise idle): they are left out, and the phases line says so.
import { spawn } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const testArgs = [new URL('./run-tests.mjs', import.meta.url).pathname, ...process.argv.slice(2)];

/** Runs one phase; `buffer` keeps its output until it ends (for phases beside the tests). */
function phase(name, cmd, args, buffer) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: buffer ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    const out = [];
    if (buffer) {
      child.stdout.on('data', (d) => out.push(d));
      child.stderr.on('data', (d) => out.push(d));
    }
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (buffer && out.length > 0) process.stdout.write(`--- ${name}\n${Buffer.concat(out).toString('utf8')}`);
      if (code !== 0) console.error(`npm test: the ${name} phase failed (exit ${code})`);
      resolve({ name, seconds, ok: code === 0 });
    });
  });
}

const done = [];
/** Prints the phases line (`beside`: the phases run beside the tests; `note`: said after them) and exits. */
const report = (beside, note = '') => {
  const failed = done.filter((p) => !p.ok).map((p) => p.name);
  console.log(
    `npm test phases: ${done.map((p) => `${p.name} ${p.seconds.toFixed(1)} s${beside.includes(p.name) ? ' (beside the tests)' : ''}${p.ok ? '' : ' FAILED'}`).join(' · ')}${note}${failed.length === 0 ? '' : ` — failed: ${failed.join(', ')}`}`,
  );
  process.exit(failed.length === 0 ? 0 : 1);
};

done.push(await phase('build', npm, ['run', '--silent', 'build'], false));
if (!done[0].ok) report([]);
if (process.env['NPM_TEST_CHECKS_PASSED'] === '1') {
  done.push(await phase('tests', process.execPath, testArgs, false));
  report([], ' · typecheck and lint passed before (NPM_TEST_CHECKS_PASSED=1)');
} else if (process.env['NPM_TEST_SEQUENTIAL'] === '1') {
  for (const [name, cmd, args] of [
    ['typecheck', npm, ['run', '--silent', 'typecheck']],
    ['lint', npm, ['run', '--silent', 'lint']],
    ['tests', process.execPath, testArgs],
  ]) {
    const p = await phase(name, cmd, args, false);
    done.push(p);
    if (!p.ok) break;
  }
  report([]);
} else {
  const checks = Promise.all([phase('typecheck', npm, ['run', '--silent', 'typecheck'], true), phase('lint', npm, ['run', '--silent', 'lint'], true)]);
  const tests = await phase('tests', process.execPath, testArgs, false);
  done.push(...(await checks), tests);
  report(['typecheck', 'lint']);
}
