/**
 * Import boundaries on the build output (STYLE): the MCP shim — the process an
 * agent host launches — reaches nothing that holds or handles secrets: not the
 * vault, the executors, the journals, the daemon, nor ssh2 / libsodium /
 * better-sqlite3 / undici. Follows every relative import transitively.
 * And `postern mcp` through the binary's entry (main.js) loads only the shim:
 * main.js imports nothing statically, and its mcp branch reaches neither
 * commander nor libsodium (an agent host's spawn stays fast).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const DIST = resolve(import.meta.dirname, '../../../dist');
const FORBIDDEN_DIRS = ['vault', 'executors', 'journal', 'daemon', 'redaction', 'approvals'];
const FORBIDDEN_PACKAGES = ['ssh2', 'libsodium-wrappers-sumo', 'better-sqlite3', 'undici'];

function specifiers(src: string): { statics: string[]; dynamics: string[] } {
  const statics = [...src.matchAll(/(?:import|export)\s[^'"(]*?from\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? m[2] ?? '');
  const dynamics = [...src.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
  return { statics, dynamics };
}

function closure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (files.has(f)) continue;
    files.add(f);
    const src = readFileSync(f, 'utf8');
    for (const m of src.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s*['"]([^'"]+)['"]/g)) {
      const spec = m[1] ?? m[2] ?? m[3] ?? '';
      if (spec.startsWith('.')) todo.push(resolve(dirname(f), spec));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  return { files, packages };
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

it('postern mcp through main.js loads only the shim: no commander, no libsodium', () => {
  const main = join(DIST, 'cli', 'main.js');
  assert.ok(existsSync(main), 'build first (npm run build)');
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
