#!/usr/bin/env node
// Lint: no import cycles between modules of src/ (value and type imports alike,
// so the layering stays readable), nor between its folders (src/daemon may use
// src/home, or the other way round, never both). Prints each cycle found and
// exits 1.
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

// Tarjan's strongly connected components: any component with more than one node is a cycle.
function cyclesOf(graph) {
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
for (const f of graph.keys()) if (!idx.has(f)) strong(f);
return cycles;
}

/** The folder of src/ a module is in (its first path segment; the files at the top are one folder). */
const folderOf = (f) => {
  const parts = relative(root, f).split('/');
  return parts.length > 1 ? join(root, parts[0]) : root;
};
const folders = new Map();
for (const [f, deps] of graph) {
  const from = folderOf(f);
  if (!folders.has(from)) folders.set(from, new Set());
  for (const d of deps) if (folderOf(d) !== from) folders.get(from).add(folderOf(d));
}
/** One import that makes folder `a` depend on folder `b`, to name in the message. */
const example = (a, b) => {
  for (const [f, deps] of graph) if (folderOf(f) === a) for (const d of deps) if (folderOf(d) === b) return `${relative(process.cwd(), f)} → ${relative(process.cwd(), d)}`;
  return '';
};

const moduleCycles = cyclesOf(graph);
const folderCycles = cyclesOf(folders);
for (const c of moduleCycles) console.error(`import cycle: ${c.map((f) => relative(process.cwd(), f)).sort().join(' ↔ ')}`);
for (const c of folderCycles) {
  const names = c.map((f) => relative(process.cwd(), f)).sort();
  const links = c.flatMap((a) => c.filter((b) => b !== a && folders.get(a).has(b)).map((b) => example(a, b)));
  console.error(`folder cycle: ${names.join(' ↔ ')} (${links.join('; ')})`);
}
if (moduleCycles.length + folderCycles.length > 0) process.exit(1);
