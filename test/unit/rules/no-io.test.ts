/**
 * src/rules holds the pure rules every part shares (canonical JSON, the error
 * codes, path segments, query names, header rules, terminal text…): they
 * never touch a file, a socket, a process or the clock, so the TUI and any
 * future page may import them and a table test is their whole proof. This
 * test reads each module's imports and its uses of the process, the clock and
 * the network, and fails on the first that is not pure.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const DIR = join(import.meta.dirname, '../../../src/rules');
/** What a rule may import besides its sibling rules: hashing and display width (required on first use), no I/O. */
const ALLOWED = new Set(['node:crypto', 'string-width', 'get-east-asian-width', 'node:module']);
const IMPORT = /^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\brequire\(\s*['"]([^'"]+)['"]\s*\)/gm;
const IMPURE = [/\bprocess\./, /\bDate\.now\(/, /\bnew Date\(\s*\)/, /\bperformance\./, /\bfetch\(/, /\bsetTimeout\(/, /\bsetInterval\(/, /\bglobalThis\b/];

describe('src/rules: pure rules, no I/O', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.ts'));

  it('holds the shared rules', () => {
    for (const f of ['canonical.ts', 'errors.ts', 'terminal-text.ts', 'path-segments.ts', 'query-names.ts', 'http-headers.ts']) assert.ok(files.includes(f), f);
  });

  for (const f of files) {
    it(`${f} imports only sibling rules, hashing and display width, and touches no process, clock or network`, () => {
      const text = readFileSync(join(DIR, f), 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] ?? m[2] ?? m[3] ?? m[4] ?? '';
        const sibling = /^\.\/[a-z-]+\.js$/.test(spec);
        assert.ok(sibling || ALLOWED.has(spec), `${f} imports ${spec}`);
      }
      const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const p of IMPURE) assert.ok(!p.test(code), `${f} uses ${p.source}`);
    });
  }

  it('the check fails on a rule that reads a file (it can fail)', () => {
    const bad = "import { readFileSync } from 'node:fs';\n";
    const m = [...bad.matchAll(IMPORT)][0];
    const spec = m?.[1] ?? '';
    assert.equal(/^\.\/[a-z-]+\.js$/.test(spec) || ALLOWED.has(spec), false);
  });
});
