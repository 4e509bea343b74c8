/**
 * Import boundaries on the build output (STYLE): the MCP shim — the process an
 * agent host launches — reaches nothing that holds or handles secrets: not the
 * vault, the executors, the journals, the daemon, nor ssh2 / libsodium /
 * better-sqlite3 / undici. Follows every relative import transitively.
 * And `postern mcp` through the binary's entry (main.js) loads only the shim:
 * main.js imports nothing statically, and its mcp branch reaches neither
 * commander nor libsodium (an agent host's spawn stays fast). The same holds
 * in the bundle that runs (dist/bundle.json, esbuild's metafile: which sources
 * went into which file), and the libraries loaded on first use stay out of it.
 *
 * The operator UI (dist/tui) talks to the daemon only through the operator
 * protocol: its files import only dist/tui, dist/protocol and dist/rules (the
 * pure rules, no I/O), and the packages ink, react and string-width; and
 * nothing it reaches, transitively, lies outside those three. Every file that exists is checked
 * (none yet is not a failure: the UI lands separately).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

const DIST = resolve(import.meta.dirname, '../../../dist');
/** Top-level folders (and src/libraries.ts, which requires undici and ssh2) the shim never reaches. */
const FORBIDDEN_DIRS = ['vault', 'executors', 'journal', 'daemon', 'redaction', 'approvals', 'libraries.js'];
const FORBIDDEN_PACKAGES = ['ssh2', 'libsodium-wrappers-sumo', 'better-sqlite3', 'undici'];

const IMPORT = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s*['"]([^'"]+)['"]/g;

/** What one file imports directly (`staticOnly`: not its `import()`s): resolved relative files, and bare package names. */
function importsOf(f: string, staticOnly = false): { files: string[]; packages: string[] } {
  const files: string[] = [];
  const packages: string[] = [];
  const src = readFileSync(f, 'utf8');
  for (const spec of staticOnly ? specifiers(src).statics : [...src.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3] ?? '')) {
    if (spec.startsWith('.')) files.push(resolve(dirname(f), spec));
    else packages.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
  }
  return { files, packages };
}

function specifiers(src: string): { statics: string[]; dynamics: string[] } {
  const statics = [...src.matchAll(/(?:import|export)\s[^'"(]*?from\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? m[2] ?? '');
  const dynamics = [...src.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
  return { statics, dynamics };
}

/** Every file and package `entries` reach (`staticOnly`: what loading them evaluates before anything runs). */
function closure(entries: string | string[], opts: { staticOnly?: boolean } = {}): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = typeof entries === 'string' ? [entries] : [...entries];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (files.has(f)) continue;
    files.add(f);
    const direct = importsOf(f, opts.staticOnly);
    todo.push(...direct.files);
    for (const p of direct.packages) packages.add(p);
  }
  return { files, packages };
}

function jsFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...jsFilesUnder(p));
    else if (name.endsWith('.js')) out.push(p);
  }
  return out;
}

const TUI_PACKAGES = ['ink', 'react', 'string-width'];
const TUI_MAY_REACH = ['tui', 'protocol', 'rules'];

/** The checks on the UI's files, given the build directory (a function so a fixture build can prove it fails). */
export function tuiBoundaryProblems(dist: string): string[] {
  const problems: string[] = [];
  const tuiFiles = jsFilesUnder(join(dist, 'tui'));
  for (const f of tuiFiles) {
    const direct = importsOf(f);
    for (const p of direct.packages) if (!TUI_PACKAGES.includes(p)) problems.push(`${relative(dist, f)} imports ${p}`);
    for (const g of direct.files) {
      const top = relative(dist, g).split('/')[0]!;
      if (!TUI_MAY_REACH.includes(top)) problems.push(`${relative(dist, f)} imports ${relative(dist, g)}`);
    }
  }
  if (tuiFiles.length > 0) {
    for (const f of closure(tuiFiles).files) {
      const top = relative(dist, f).split('/')[0]!;
      if (!TUI_MAY_REACH.includes(top)) problems.push(`the UI reaches ${relative(dist, f)}`);
    }
  }
  return problems;
}

it('the MCP shim imports nothing that handles secrets', () => {
  const entry = join(DIST, 'mcp', 'shim.js');
  assert.ok(existsSync(entry), 'build first (npm run build)');
  const { files, packages } = closure(entry);
  for (const f of files) {
    const top = relative(DIST, f).split('/')[0]!;
    assert.ok(!FORBIDDEN_DIRS.includes(top), `shim reaches ${relative(DIST, f)}`);
  }
  for (const p of FORBIDDEN_PACKAGES) assert.ok(!packages.has(p), `shim imports ${p}`);
  assert.ok(files.size >= 2, 'the walk followed the shim\'s own imports');
});

it('the operator UI imports only the operator protocol and the pure rules (and ink, react, string-width)', () => {
  assert.ok(existsSync(join(DIST, 'protocol')), 'build first (npm run build)');
  assert.deepEqual(tuiBoundaryProblems(DIST), []);
});

it('the UI boundary check catches a UI file that reaches past the protocol', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'postern-dist-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'tui'), { recursive: true });
  mkdirSync(join(dir, 'protocol'), { recursive: true });
  mkdirSync(join(dir, 'vault'), { recursive: true });
  writeFileSync(join(dir, 'protocol', 'operator.js'), "import { z } from 'zod';\nexport const x = z;\n");
  writeFileSync(join(dir, 'vault', 'index.js'), 'export const secret = 1;\n');
  writeFileSync(join(dir, 'tui', 'ok.js'), "import { Box } from 'ink';\nimport { x } from '../protocol/operator.js';\nexport { Box, x };\n");
  assert.deepEqual(tuiBoundaryProblems(dir), []);
  writeFileSync(join(dir, 'tui', 'bad.js'), "import { secret } from '../vault/index.js';\nimport { readFileSync } from 'node:fs';\nexport { secret, readFileSync };\n");
  assert.deepEqual(tuiBoundaryProblems(dir).sort(), ['the UI reaches vault/index.js', 'tui/bad.js imports node:fs', 'tui/bad.js imports vault/index.js']);
});

it('postern mcp through main.js loads only the shim: no commander, no libsodium', () => {
  // tsc's dist/cli/main.js is overwritten by the bundle's entry (scripts/postbuild.mjs): its source says what it imports.
  const main = resolve(import.meta.dirname, '../../../src/cli/main.ts');
  assert.ok(existsSync(join(DIST, 'cli', 'mcp-entry.js')), 'build first (npm run build)');
  const { statics, dynamics } = specifiers(readFileSync(main, 'utf8'));
  assert.deepEqual(statics.filter((s) => !s.startsWith('node:')), [], 'main.js imports nothing of its own statically');
  assert.deepEqual(dynamics.sort(), ['./mcp-entry.js', './program.js']);
  const { files, packages } = closure(join(DIST, 'cli', 'mcp-entry.js'));
  for (const p of [...FORBIDDEN_PACKAGES, 'commander', 'yaml', 'zod', '@modelcontextprotocol/server']) assert.ok(!packages.has(p), `postern mcp loads ${p}`);
  for (const f of files) {
    const rel = relative(DIST, f);
    assert.ok(!FORBIDDEN_DIRS.includes(rel.split('/')[0]!) && rel !== join('cli', 'program.js') && !rel.startsWith(join('cli', 'commands')), `postern mcp loads ${rel}`);
  }
  assert.ok(files.has(join(DIST, 'mcp', 'shim.js')));
});

/**
 * Loaded on first use, each by one module (src/libraries.ts; string-width by the terminal-text
 * rule, which the UI imports): each is hundreds of modules, or a tenth of a start, that a daemon's
 * start or a command's run would otherwise parse for nothing.
 */
const ON_FIRST_USE: Record<string, string> = { '@simplewebauthn/server': 'libraries.js', pg: 'libraries.js', qrcode: 'libraries.js', undici: 'libraries.js', ssh2: 'libraries.js', 'string-width': 'rules/terminal-text.js' };

it('the daemon and every command load WebAuthn, the PostgreSQL driver, the QR encoder, undici, ssh2 and string-width only when they use them', () => {
  const daemon = join(DIST, 'daemon', 'run.js');
  const entries = [daemon, ...jsFilesUnder(join(DIST, 'cli', 'commands'))];
  assert.ok(entries.length > 10 && entries.every((f) => existsSync(f)), 'build first (npm run build)');
  const atStart = closure(daemon, { staticOnly: true });
  assert.ok(atStart.packages.has('zod') && atStart.files.has(join(DIST, 'libraries.js')), 'the walk followed the daemon\'s static imports');
  for (const entry of entries) {
    const { packages } = closure(entry, { staticOnly: true });
    for (const p of Object.keys(ON_FIRST_USE)) assert.ok(!packages.has(p), `${relative(DIST, entry)} loads ${p} before it is used`);
  }
  // Each is still there, on demand, in the one module that loads it.
  for (const [p, loader] of Object.entries(ON_FIRST_USE)) {
    const text = readFileSync(join(DIST, loader), 'utf8');
    const required = text.includes('createRequire(') && text.includes(`)('${p}')`);
    assert.ok(required || [`load('${p}')`, `import('${p}')`].some((call) => text.includes(call)), `${loader} loads ${p}`);
  }
});

/** esbuild's metafile of the bundle that runs (dist/bundle.json, written by scripts/postbuild.mjs). */
interface BundleMeta {
  readonly outputs: Record<string, { readonly entryPoint?: string; readonly inputs: Record<string, unknown>; readonly imports: readonly { path: string; kind: string }[] }>;
}

it('the bundle keeps the boundaries: postern mcp loads only the shim, and the libraries loaded on first use stay out of every start', () => {
  const meta = JSON.parse(readFileSync(join(DIST, 'bundle.json'), 'utf8')) as BundleMeta;
  /** The outputs loading `start` evaluates, and the sources in them. */
  const loads = (start: string): { outputs: Set<string>; inputs: Set<string> } => {
    const outputs = new Set<string>();
    const todo = [start];
    while (todo.length > 0) {
      const o = todo.pop()!;
      if (outputs.has(o)) continue;
      outputs.add(o);
      todo.push(...meta.outputs[o]!.imports.filter((i) => i.kind === 'import-statement' && i.path in meta.outputs).map((i) => i.path));
    }
    return { outputs, inputs: new Set([...outputs].flatMap((o) => Object.keys(meta.outputs[o]!.inputs))) };
  };
  const main = meta.outputs['dist/cli/main.js']!;
  assert.deepEqual(Object.keys(main.inputs), ['dist/cli/main.js'], 'the entry holds only its own code');
  assert.deepEqual(main.imports.filter((i) => i.kind !== 'dynamic-import'), [], 'the entry loads nothing before it knows the command');
  const shimChunk = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === 'dist/cli/mcp-entry.js')?.[0];
  assert.ok(shimChunk !== undefined && main.imports.some((i) => i.path === shimChunk), 'the mcp branch is a chunk of its own');
  const shim = loads(shimChunk).inputs;
  assert.ok(shim.has('dist/mcp/shim.js'), 'the walk reached the shim');
  const forbidden = [...FORBIDDEN_DIRS.map((d) => `dist/${d}`), 'dist/cli/program.js', 'dist/cli/commands/', ...[...FORBIDDEN_PACKAGES, 'commander', 'yaml', 'zod', '@modelcontextprotocol/server'].map((p) => `node_modules/${p}/`)];
  for (const input of shim) assert.ok(!forbidden.some((f) => input.startsWith(f)), `postern mcp loads ${input}`);
  const all = Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs));
  for (const p of Object.keys(ON_FIRST_USE)) assert.ok(!all.some((i) => i.startsWith(`node_modules/${p}/`)), `${p} is inside the bundle, not loaded from node_modules on first use`);
  const program = loads(main.imports.find((i) => i.path !== shimChunk)!.path).inputs;
  assert.ok([...program].some((i) => i.startsWith('node_modules/commander/')), 'the walk sees the packages inside the bundle (the other branch loads commander)');
});
