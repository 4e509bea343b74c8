/** The import-cycle lint finds a cycle (value, type-only or dynamic; between modules, folders or sub-folders) and passes a tree without one. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const SCRIPT = resolve(import.meta.dirname, '../../../scripts/check-cycles.mjs');

function check(files: Record<string, string>): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-cycles-'));
  try {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
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

  it('reports a cycle through a dynamic import()', () => {
    const r = check({ 'a.ts': "export const a = (): Promise<unknown> => import('./b.js');\n", 'b.ts': "import { a } from './a.js';\nexport const b = a;\n" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /import cycle: .*a\.ts ↔ .*b\.ts .*\(dynamic\)/);
  });

  it('reports top-level folders that use each other, one way through a dynamic import()', () => {
    const r = check({ 'cli/run.ts': "export const run = (): Promise<unknown> => import('../demo/index.js');\n", 'cli/tty.ts': 'export const tty = 1;\n', 'demo/index.ts': "import { tty } from '../cli/tty.js';\nexport const d = tty;\n" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /folder cycle: .*cli\/ ↔ .*demo\//);
  });

  it('reports sub-folders that use each other, and passes them once the shared file sits above both', () => {
    const web = {
      'core/index.ts': "export * from './catalog/parse.js';\n",
      'core/catalog/parse.ts': "import { check } from '../schema/check.js';\nexport const parse = check;\n",
      'core/catalog/issues.ts': 'export const issue = 1;\n',
      'core/schema/check.ts': "import { issue } from '../catalog/issues.js';\nexport const check = issue;\n",
    };
    const r = check(web);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /sub-folder cycle in .*core\/: .*catalog\/ ↔ .*schema\//);
    const layered = {
      'core/index.ts': "export * from './catalog/parse.js';\n",
      'core/catalog/parse.ts': "import { check } from '../schema/check.js';\nexport const parse = check;\n",
      'core/issues.ts': 'export const issue = 1;\n',
      'core/schema/check.ts': "import { issue } from '../issues.js';\nexport const check = issue;\n",
    };
    assert.equal(check(layered).status, 0);
  });
});
