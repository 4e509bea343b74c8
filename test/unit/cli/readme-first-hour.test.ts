/**
 * What the README tells a new user in the first hour, checked against the
 * commands it names: one unlock for several approvals (attach, watch), the
 * team set-up in an order that runs (the role before `--grant`), the config
 * file under $POSTERN_HOME, and the expected `prepare` warning of a global
 * install.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const README = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');
const section = (title: string): string => {
  const start = README.indexOf(`\n## ${title}`);
  assert.ok(start >= 0, title);
  const end = README.indexOf('\n## ', start + 4);
  return README.slice(start, end < 0 ? undefined : end);
};

describe('README: the first hour', () => {
  it('the quickstart points at one unlock for several cards: attach and approvals watch', () => {
    const q = section('Quickstart');
    assert.match(q, /one unlock/);
    assert.match(q, /`postern attach`/);
    assert.match(q, /`postern approvals watch`/);
  });
  it('the team set-up creates the role before --init-schema --grant, and writes config.yaml under $POSTERN_HOME', () => {
    const t = section('For teams');
    const role = t.indexOf('createuser');
    const grant = t.indexOf('--init-schema --grant postern_ship');
    assert.ok(role >= 0 && role < grant, 'createuser comes first');
    assert.doesNotMatch(t, /~\/\.postern\/config\.yaml/);
    assert.match(t, /\$\{POSTERN_HOME:-\$HOME\/\.postern\}\/config\.yaml/);
  });
  it('a global install says the prepare warning is expected', () => {
    assert.match(section('Quickstart'), /npm install -g \.[\s\S]*`prepare` script was not run: that is expected/);
  });
});
