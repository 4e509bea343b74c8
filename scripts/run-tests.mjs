#!/usr/bin/env node
// Runs the test suite with node's own test runner. Node 20 does not expand
// globs for --test, so this finds test/**/*.test.ts itself and hands the list
// to `node --import tsx --test`. Arguments narrow the set to paths under them.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['test'];
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
if (files.length === 0) {
  console.error(`no test files under ${roots.join(', ')}`);
  process.exit(1);
}
const res = spawnSync(
  process.execPath,
  // A test that hangs fails with its name after 8 minutes instead of stalling the run.
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=480000', ...files],
  { stdio: 'inherit' },
);
process.exit(res.status ?? 1);
