/** The import-cycle lint finds a cycle (value or type-only) and passes a tree without one. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const SCRIPT = resolve(import.meta.dirname, '../../../scripts/check-cycles.mjs');

function check(files: Record<string, string>): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-cycles-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const r = spawnSync(process.execPath, [SCRIPT, dir], { encoding: 'utf8' });
    return { status: r.status, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('check-cycles', () => {
  it('reports a cycle through a type-only import', () => {
    const r = check({ 'a.ts': "import type { B } from './b.js';\nexport type A = B;\n", 'b.ts': "import { a } from './a.js';\nexport type B = typeof a;\n" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /import cycle: .*a\.ts ↔ .*b\.ts/);
  });

  it('reports a cycle through a re-export and passes a tree without one', () => {
    assert.equal(check({ 'a.ts': "export * from './b.js';\n", 'b.ts': "export { x } from './c.js';\n", 'c.ts': "import './a.js';\nexport const x = 1;\n" }).status, 1);
    assert.equal(check({ 'a.ts': "import { b } from './b.js';\nexport const a = b;\n", 'b.ts': 'export const b = 1;\n' }).status, 0);
  });
});
