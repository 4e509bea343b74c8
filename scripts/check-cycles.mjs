#!/usr/bin/env node
// Lint: no import cycles between modules of src/ (value and type imports alike,
// so the layering stays readable). Prints each cycle found and exits 1.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'src');
const files = [];
(function walk(p) {
  if (statSync(p).isDirectory()) for (const n of readdirSync(p).sort()) walk(join(p, n));
  else if (/\.tsx?$/.test(p) && !p.endsWith('.d.ts')) files.push(p);
})(root);

const SPEC = /^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]|^\s*import\s*['"](\.[^'"]+)['"]/gm;
const graph = new Map();
for (const f of files) {
  const deps = new Set();
  for (const m of readFileSync(f, 'utf8').matchAll(SPEC)) {
    const spec = m[1] ?? m[2];
    const target = resolve(dirname(f), spec).replace(/\.js$/, '.ts');
    const candidates = [target, target.replace(/\.ts$/, '.tsx'), join(target.replace(/\.ts$/, ''), 'index.ts')];
    const hit = candidates.find((c) => graph.has(c) || files.includes(c));
    if (hit !== undefined) deps.add(hit);
  }
  graph.set(f, deps);
}

// Tarjan's strongly connected components: any component with more than one module is a cycle.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const on = new Set();
const cycles = [];
function strong(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of graph.get(v) ?? []) {
    if (!idx.has(w)) {
      strong(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const comp = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      comp.push(w);
    } while (w !== v);
    if (comp.length > 1 || (graph.get(v)?.has(v) ?? false)) cycles.push(comp);
  }
}
for (const f of files) if (!idx.has(f)) strong(f);

if (cycles.length > 0) {
  for (const c of cycles) console.error(`import cycle: ${c.map((f) => relative(process.cwd(), f)).sort().join(' ↔ ')}`);
  process.exit(1);
}
