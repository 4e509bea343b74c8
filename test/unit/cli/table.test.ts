import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderTable } from '../../../src/cli/table.js';
import { VERSION } from '../../../src/version.js';

it('renders aligned columns without trailing spaces', () => {
  const t = renderTable(['A', 'LONGER'], [['xyz', '1'], ['q', '']]);
  assert.equal(t, 'A    LONGER\nxyz  1\nq');
});

it('VERSION matches package.json', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(VERSION, pkg.version);
});
