#!/usr/bin/env node
// Lint: no import cycles in src/, at three scales, through static imports,
// re-exports and dynamic `import('./x.js')` alike (value and type imports too),
// so the layering stays readable:
//   - between modules;
//   - between src's top-level folders (src/daemon may use src/home, or the
//     other way round, never both);
//   - between the sub-folders of a folder: inside every folder of src (at any
//     depth) each sub-folder, with everything under it, counts as one unit and
//     each file directly in the folder as one unit of its own, and those units
//     form no cycle, so the sub-folders are layers (docs/decisions.md, "Layers").
//     The folders in NOT_YET_LAYERED are skipped, each with the reason.
// Prints each cycle found, with one import per link (marked "dynamic" when it
// is an `import()`), and exits 1.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** Folders (relative to the root) whose sub-folders still import each other, and why they are not layered yet. */
const NOT_YET_LAYERED = new Map([]);

const root = resolve(process.argv[2] ?? 'src');
const files = [];
(function walk(p) {
  if (statSync(p).isDirectory()) for (const n of readdirSync(p).sort()) walk(join(p, n));
  else if (/\.tsx?$/.test(p) && !p.endsWith('.d.ts')) files.push(p);
})(root);
const known = new Set(files);

// `import … from './x.js'`, `export … from './x.js'`, `import './x.js'`, and `import('./x.js')` (a literal specifier).
const STATIC = /^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]|^\s*import\s*['"](\.[^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g;
const graph = new Map();
/** `from\0to` for every edge that is only a dynamic import. */
const dynamic = new Set();
function resolveSpec(from, spec) {
  const target = resolve(dirname(from), spec).replace(/\.js$/, '.ts');
  return [target, target.replace(/\.ts$/, '.tsx'), join(target.replace(/\.ts$/, ''), 'index.ts')].find((c) => known.has(c));
}
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const deps = new Set();
  for (const m of text.matchAll(STATIC)) {
    const hit = resolveSpec(f, m[1] ?? m[2]);
    if (hit !== undefined) deps.add(hit);
  }
  for (const m of text.matchAll(DYNAMIC)) {
    const hit = resolveSpec(f, m[1]);
    if (hit !== undefined && !deps.has(hit)) {
      deps.add(hit);
      dynamic.add(`${f}\0${hit}`);
    }
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

const shown = (p) => relative(process.cwd(), p) || '.';
const edge = (f, d) => `${shown(f)} → ${shown(d)}${dynamic.has(`${f}\0${d}`) ? ' (dynamic)' : ''}`;

/**
 * The cycles between the units of `folder`: each sub-folder (with everything
 * under it) is one unit, each file directly in it another; `top` makes the
 * files at the root of src one unit (the top-level check).
 */
function unitCycles(folder, top) {
  const unitOf = (f) => {
    const rel = relative(folder, f);
    if (rel.startsWith('..')) return undefined;
    const parts = rel.split(sep);
    if (parts.length > 1) return join(folder, parts[0]);
    return top ? folder : f;
  };
  const units = new Map();
  for (const [f, deps] of graph) {
    const from = unitOf(f);
    if (from === undefined) continue;
    if (!units.has(from)) units.set(from, new Set());
    for (const d of deps) {
      const to = unitOf(d);
      if (to !== undefined && to !== from) units.get(from).add(to);
    }
  }
  /** One import that makes unit `a` depend on unit `b`, to name in the message. */
  const example = (a, b) => {
    for (const [f, deps] of graph) if (unitOf(f) === a) for (const d of deps) if (unitOf(d) === b) return edge(f, d);
    return '';
  };
  return cyclesOf(units).map((c) => {
    const names = c.map((u) => shown(u) + (known.has(u) ? '' : '/')).sort();
    const links = c.flatMap((a) => c.filter((b) => b !== a && units.get(a).has(b)).map((b) => example(a, b)));
    return `${names.join(' ↔ ')} (${links.join('; ')})`;
  });
}

/** Every folder under the root that has sub-folders holding sources. */
const folders = [...new Set(files.map((f) => dirname(f)).flatMap((d) => {
  const out = [];
  for (let p = dirname(d); p.startsWith(root) && p !== dirname(root); p = dirname(p)) out.push(p);
  return out;
}))].filter((d) => d !== root).sort();

const moduleCycles = cyclesOf(graph);
for (const c of moduleCycles) {
  const links = c.flatMap((a) => c.filter((b) => graph.get(a).has(b)).map((b) => edge(a, b)));
  console.error(`import cycle: ${c.map(shown).sort().join(' ↔ ')} (${links.join('; ')})`);
}
let failures = moduleCycles.length;
for (const msg of unitCycles(root, true)) {
  console.error(`folder cycle: ${msg}`);
  failures++;
}
for (const folder of folders) {
  if (NOT_YET_LAYERED.has(relative(root, folder))) continue;
  for (const msg of unitCycles(folder, false)) {
    console.error(`sub-folder cycle in ${shown(folder)}/: ${msg}`);
    failures++;
  }
}
if (failures > 0) process.exit(1);
