/**
 * The quickstart's catalog step (issue 25 §6): `postern catalog new` writes a
 * commented starter catalog.yaml (mode 600) that uses the quickstart's secret
 * and passes `postern catalog check` and `postern catalog accept` as written;
 * it never replaces a catalog that exists. Runs the built CLI without a
 * terminal, with a canary secret that must never be printed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { STARTER_CATALOG, STARTER_SECRET } from '../../src/cli/starter-catalog.js';

const CANARY = 'ghp_canaryStarterCatalog0123456789abcdef';

describe('postern catalog new', () => {
  let sb: CliSandbox;
  let g: string[];
  before(async () => {
    sb = await cliSandbox();
    g = ['--passphrase-file', await sb.file('pass', 'starter-catalog-passphrase\n')];
    assert.equal((await sb.run(['init', ...g])).code, 0);
  });
  after(() => sb.cleanup());

  it('names the secret the README quickstart adds', async () => {
    const readme = await readFile(resolve(import.meta.dirname, '../../README.md'), 'utf8');
    assert.ok(readme.includes(`postern secret add ${STARTER_SECRET} --kind http_bearer`), 'the quickstart adds the starter catalog\'s secret');
    assert.ok(readme.includes('postern catalog new'), 'the quickstart writes the starter');
  });

  it('writes a starter that passes check and accept as written, then refuses to replace it', async () => {
    const add = await sb.run(['secret', 'add', STARTER_SECRET, '--kind', 'http_bearer', '--stdin', ...g], { input: CANARY });
    assert.equal(add.code, 0, add.stderr);
    const file = join(sb.home, 'catalog.yaml');
    const made = await sb.run(['catalog', 'new']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /wrote a starter catalog to .*catalog\.yaml/);
    assert.equal(await readFile(file, 'utf8'), STARTER_CATALOG);
    assert.equal((await stat(file)).mode & 0o777, 0o600);

    const check = await sb.run(['catalog', 'check']);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /Release gate passed/);
    const digest = createHash('sha256').update(STARTER_CATALOG).digest('hex');
    const accept = await sb.run(['catalog', 'accept', '--digest', digest, ...g]);
    assert.equal(accept.code, 0, accept.stdout + accept.stderr);

    const again = await sb.run(['catalog', 'new']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^postern: FILE_IO: .*catalog\.yaml: it already exists/m);
    assert.equal(await readFile(file, 'utf8'), STARTER_CATALOG, 'the existing catalog is kept');
    sb.assertNeverPrinted(CANARY, 'the starter\'s secret');
  });

  it('never replaces an edited catalog, in the home or at a named file', async () => {
    const mine = await sb.file('mine.yaml', 'version: 1\n# my own\n');
    const r = await sb.run(['catalog', 'new', mine]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /FILE_IO/);
    assert.equal(await readFile(mine, 'utf8'), 'version: 1\n# my own\n');
    const other = join(sb.dir, 'other.yaml');
    assert.equal((await sb.run(['catalog', 'new', other])).code, 0);
    assert.equal(await readFile(other, 'utf8'), STARTER_CATALOG);
    await writeFile(other, 'edited\n');
    assert.equal((await sb.run(['catalog', 'new', other])).code, 1);
    assert.equal(await readFile(other, 'utf8'), 'edited\n');
  });

  it('a missing catalog points at `catalog new`', async () => {
    const r = await sb.run(['catalog', 'check', join(sb.dir, 'absent.yaml')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: CATALOG_NOT_FOUND: .*`postern catalog new` writes a starter$/m);
  });
});
