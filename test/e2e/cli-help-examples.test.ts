/**
 * What docs/cli.md says of `--help`: the help of every top-level command,
 * groups included, ends with examples; and the examples use the names the
 * README and the starter catalog use (the starter's secret is `github`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { STARTER_SECRET } from '../../src/cli/starter-catalog.js';

/** The block of `Title:` and indented lines (a `postern …` command among them) that closes a help text, or null. */
function closingExamples(text: string): string[] | null {
  const lines = text.trimEnd().split('\n');
  let i = lines.length - 1;
  while (i >= 0 && /^ {2}\S/.test(lines[i] ?? '')) i--;
  const title = lines[i] ?? '';
  const body = lines.slice(i + 1);
  if (!/^[A-Z][A-Za-z ]*:$/.test(title) || /^(Commands|Options|Arguments):$/.test(title) || body.length === 0) return null;
  return body.some((l) => /\bpostern /.test(l)) ? body : null;
}

describe('--help ends with examples', () => {
  let sb: CliSandbox;
  before(async () => {
    sb = await cliSandbox();
  });
  after(() => sb.cleanup());

  it('every top-level command, and the program itself', { timeout: 120_000 }, async () => {
    const top = await sb.run(['--help']);
    assert.equal(top.code, 0, top.stderr);
    assert.ok(closingExamples(top.stdout) !== null, top.stdout);
    const commands = [...top.stdout.split('Commands:\n')[1]!.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    for (const group of ['secret', 'catalog', 'approvals', 'audit', 'anchor', 'ssh', 'http']) assert.ok(commands.includes(group), group);
    const missing: string[] = [];
    for (const c of commands) {
      const r = await sb.run([c, '--help']);
      assert.equal(r.code, 0, `${c}: ${r.stderr}`);
      if (closingExamples(r.stdout) === null) missing.push(c);
    }
    assert.deepEqual(missing, [], 'commands whose --help does not end with examples');
  });

  it(`examples name the starter's secret (${STARTER_SECRET}), as the README does`, async () => {
    const readme = await readFile(resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const line = `postern secret add ${STARTER_SECRET} --kind http_bearer`;
    assert.ok(readme.includes(line), 'the README quickstart');
    for (const args of [['--help'], ['secret', '--help'], ['secret', 'add', '--help']]) {
      const r = await sb.run(args);
      assert.ok(r.stdout.includes(line), args.join(' '));
      assert.doesNotMatch(r.stdout, /github-token/, args.join(' '));
    }
  });
});
