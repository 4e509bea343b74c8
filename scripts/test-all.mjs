#!/usr/bin/env node
// `npm test`: build, type-check, lint, then every test; each phase timed, and
// a table of the phases at the end (the test runner prints its ten slowest
// files before it). The first failing phase stops the run with its exit code.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const phases = [
  { name: 'build', cmd: npm, args: ['run', '--silent', 'build'] },
  { name: 'typecheck', cmd: npm, args: ['run', '--silent', 'typecheck'] },
  { name: 'lint', cmd: npm, args: ['run', '--silent', 'lint'] },
  { name: 'tests', cmd: process.execPath, args: [new URL('./run-tests.mjs', import.meta.url).pathname, ...process.argv.slice(2)] },
];

/** @type {{ name: string, seconds: number }[]} */
const times = [];
let status = 0;
for (const p of phases) {
  const started = performance.now();
  const r = spawnSync(p.cmd, p.args, { stdio: 'inherit' });
  times.push({ name: p.name, seconds: (performance.now() - started) / 1000 });
  status = r.status ?? 1;
  if (status !== 0) {
    console.error(`npm test: the ${p.name} phase failed (exit ${status})`);
    break;
  }
}
const total = times.reduce((a, t) => a + t.seconds, 0);
console.log(`npm test phases: ${times.map((t) => `${t.name} ${t.seconds.toFixed(1)} s`).join(' · ')} · total ${total.toFixed(1)} s`);
process.exit(status);
