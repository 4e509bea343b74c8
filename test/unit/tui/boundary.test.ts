/**
 * Import boundary of the TUI (STYLE, issue 10): src/tui imports only
 * src/protocol, src/rules (pure, no I/O: test/unit/rules/no-io.test.ts), ink,
 * react and string-width (the rules also measure with get-east-asian-width); and nothing it reaches through them touches the vault, executors, journals, daemon or their
 * packages. Read from the sources, following every relative import.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dirname, '../../../src');
const TUI_PACKAGES = new Set(['ink', 'react', 'string-width']);
const REACHABLE_PACKAGES = new Set(['ink', 'react', 'string-width', 'get-east-asian-width', 'zod']);

function imports(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(/(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s*['"]([^'"]+)['"]/g)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

function toSource(from: string, spec: string): string {
  const base = resolve(dirname(from), spec).replace(/\.js$/, '');
  for (const ext of ['.ts', '.tsx', '/index.ts']) if (existsSync(base + ext)) return base + ext;
  throw new Error(`cannot resolve ${spec} from ${relative(SRC, from)}`);
}

function pkg(spec: string): string {
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec);
}

it('src/tui imports only src/protocol, src/rules, ink, react and string-width; its closure reaches no secret-handling layer', () => {
  const tuiFiles = readdirSync(join(SRC, 'tui'), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => join(SRC, 'tui', f));
  assert.ok(tuiFiles.length >= 10);
  for (const f of tuiFiles) {
    for (const spec of imports(f)) {
      if (spec.startsWith('.')) {
        const top = relative(SRC, toSource(f, spec)).split('/')[0];
        assert.ok(top === 'tui' || top === 'protocol' || top === 'rules', `${relative(SRC, f)} imports ${spec}`);
      } else {
        assert.ok(TUI_PACKAGES.has(pkg(spec)), `${relative(SRC, f)} imports the package ${spec}`);
      }
    }
  }
  const seen = new Set<string>();
  const todo = [...tuiFiles];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    const top = relative(SRC, f).split('/')[0];
    assert.ok(top === 'tui' || top === 'protocol' || top === 'rules', `the TUI reaches ${relative(SRC, f)}`);
    for (const spec of imports(f)) {
      if (spec.startsWith('.')) todo.push(toSource(f, spec));
      else if (!spec.startsWith('node:')) assert.ok(REACHABLE_PACKAGES.has(pkg(spec)), `the TUI reaches the package ${spec} via ${relative(SRC, f)}`);
    }
  }
});
