#!/usr/bin/env node
// Lint: every source path the documentation names (`src/...` in docs/*.md and
// README.md) exists, so a file moved or removed cannot leave a reader looking
// for it. Prints each missing path with where it is named, and exits 1.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? '.');
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((n) => n.endsWith('.md')).map((n) => join('docs', n))];
const missing = [];
for (const doc of docs) {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  lines.forEach((line, i) => {
    for (const m of line.matchAll(/(?<![\w/.-])src\/[\w./-]+/g)) {
      const path = m[0].replace(/[.,:;]+$/, '');
      if (!existsSync(join(root, path))) missing.push(`${doc}:${i + 1}: ${path}`);
    }
  });
}
for (const line of missing) console.error(`missing: ${line}`);
process.exit(missing.length === 0 ? 0 : 1);
