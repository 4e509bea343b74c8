/**
 * `postern catalog check --format github` in a pull request's CI: no home,
 * no passphrase, the base branch's file given with --against. Every problem is
 * a workflow command on the line of the tool or revision it is about; a
 * widening is a warning there even when the gate passes; a catalog that does
 * not parse gets one error per issue; and nothing in the catalog can end a
 * command early or start another one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';
import { workflowCommand } from '../../src/cli/github-annotations.js';

const targets = { api: { http: { origin: 'https://api.example.com', credential: 'api-token', auth: 'bearer' } } };
const input = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const rev = (revision: number, method: string, extra: Record<string, unknown> = {}) => ({
  revision,
  input: input({ title: { type: 'string', maxLength: 100 }, ...extra }, ['title', ...Object.keys(extra)]),
  http: { target: 'api', method, path: '/issues', body: { title: '{title}', ...Object.fromEntries(Object.keys(extra).map((k) => [k, `{${k}}`])) } },
});
const catalog = (revisions: unknown[]) => stringify({ targets, tools: { create_issue: { description: 'Create an issue.', effect: 'write', approval: 'session', revisions } } });
/** The 1-based line of the first line of `text` that matches. */
const lineOf = (text: string, re: RegExp): number => text.split('\n').findIndex((l) => re.test(l)) + 1;

describe('postern catalog check --format github', () => {
  let sb: CliSandbox;
  let base: string;

  before(async () => {
    sb = await cliSandbox();
    base = join(sb.dir, 'base.yaml');
    await writeFile(base, catalog([rev(1, 'POST')]));
  });
  after(() => sb.cleanup());

  it('a breaking revision: an error on the revision\'s line, a failing verdict, exit 1', async () => {
    const text = catalog([rev(1, 'POST'), rev(2, 'POST', { team: { type: 'string' } })]);
    const file = join(sb.dir, 'breaking.yaml');
    await writeFile(file, text);
    const r = await sb.run(['catalog', 'check', file, '--against', base, '--format', 'github']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    for (const l of lines) assert.match(l, /^::(error|warning|notice) file=[^:]*(,line=\d+)?(,title=[^:]*)?::/, l);
    const revisionLine = text.split('\n').findIndex((l, i, all) => /revision: 2/.test(l) && i > 0 && all.slice(0, i).some((x) => /revision: 1/.test(x))) + 1;
    assert.ok(lines.some((l) => l.startsWith('::error ') && l.includes(`line=${revisionLine}`) && /create_issue r1 → r2/.test(l)), `an error at line ${revisionLine}:\n${r.stdout}`);
    assert.match(lines.at(-1) ?? '', /^::error file=.*title=postern catalog check::the release gate fails/);
  });

  it('a widening that passes the gate: a warning on its line, a notice that it passes, exit 0', async () => {
    const text = catalog([rev(1, 'POST'), rev(2, 'DELETE')]);
    const file = join(sb.dir, 'widening.yaml');
    await writeFile(file, text);
    const r = await sb.run(['catalog', 'check', file, '--against', base, '--format', 'github']);
    const widening = r.stdout.split('\n').find((l) => /authority widening/.test(l));
    assert.ok(widening !== undefined, r.stdout + r.stderr);
    assert.match(widening, /^::warning /);
    assert.ok(widening.includes(`line=${lineOf(text, /revision: 2/)}`), widening);
    if (r.code === 0) assert.match(r.stdout.trim().split('\n').at(-1) ?? '', /^::notice .*the release gate passes/);
  });

  it('a catalog that does not parse: one error per issue, on its line', async () => {
    const file = join(sb.dir, 'invalid.yaml');
    await writeFile(file, `${catalog([rev(1, 'POST')])}\ntools2: [\n`);
    const r = await sb.run(['catalog', 'check', file, '--against', base, '--format', 'github']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^::error file=.*,line=\d+,title=catalog invalid::/m);
    assert.match(r.stderr, /CATALOG_INVALID/);
  });

  it('--format and --json that disagree, or an unknown format: a usage error', async () => {
    const file = join(sb.dir, 'widening.yaml');
    assert.equal((await sb.run(['catalog', 'check', file, '--against', base, '--format', 'xml'])).code, 2);
    assert.equal((await sb.run(['catalog', 'check', file, '--against', base, '--format', 'github', '--json'])).code, 2);
  });

  it('nothing in a message or a property can end the command or start another', () => {
    const line = workflowCommand('error', { file: 'a,b:c.yaml', line: 3, title: 'x::y,z' }, 'first\n::set-env name=X::1\r%0A');
    assert.equal(line.split('\n').length, 1);
    assert.equal(line, '::error file=a%2Cb%3Ac.yaml,line=3,title=x%3A%3Ay%2Cz::first%0A::set-env name=X::1%0D%250A');
  });
});
