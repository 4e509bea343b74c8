/**
 * The CLI guides (issue 11 §3): usage errors in the `postern: USAGE:` form,
 * checks that need no passphrase refused before one is read (a running
 * daemon, a bad name), every catalog problem on its own line with "did you
 * mean", completion scripts made from the command table, and examples in
 * `--help`. Runs the built CLI without a terminal; a passphrase file that
 * does not exist shows whether the passphrase was read at all.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { childEnv, cliSandbox, CLI, type CliSandbox } from '../helpers/cli.js';
import { install, type Installation } from '../helpers/daemon.js';

describe('usage errors, completion and help', () => {
  let sb: CliSandbox;
  before(async () => {
    sb = await cliSandbox();
  });
  after(() => sb.cleanup());

  it('commander usage errors read `postern: USAGE: …` with exit 2, at every depth', async () => {
    for (const [args, msg] of [
      [['bogus'], /^postern: USAGE: unknown command 'bogus' \(see `postern --help`\)$/],
      [['catalog', 'check', '--bad'], /^postern: USAGE: unknown option '--bad' \(see `postern catalog check --help`\)$/],
      [['secret', 'add', 'x'], /^postern: USAGE: required option '--kind <kind>' not specified \(see `postern secret add --help`\)$/],
      [['completion', 'tcsh'], /^postern: USAGE: .*tcsh.*invalid/],
    ] as const) {
      const r = await sb.run(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr.trim(), msg);
      assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    }
  });

  it('the bash completion completes commands, subcommands, options and hosts', async () => {
    const script = (await sb.run(['completion', 'bash'])).stdout;
    const complete = (words: string[]): string => {
      const r = spawnSync('bash', ['-c', `eval "$SCRIPT"; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _postern; echo "\${COMPREPLY[*]}"`], { env: { SCRIPT: script, PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, encoding: 'utf8' });
      return r.stdout.trim();
    };
    assert.equal(complete(['postern', 'cat']), 'catalog');
    assert.equal(complete(['postern', 'catalog', 'ac']), 'accept');
    assert.equal(complete(['postern', 'catalog', 'check', '--against-j']), '--against-journal');
    assert.equal(complete(['postern', 'setup', 'c']), 'claude-code codex cursor');
    for (const shell of ['zsh', 'fish']) {
      const r = await sb.run(['completion', shell]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /secret/);
    }
    const fish = (await sb.run(['completion', 'fish'])).stdout;
    assert.match(fish, /complete -c postern -n '__fish_seen_subcommand_from secret; and __fish_seen_subcommand_from add' -l kind/);
  });

  it('the main commands end their --help with examples', async () => {
    for (const args of [[], ['init'], ['secret', 'add'], ['catalog', 'check'], ['catalog', 'accept'], ['daemon'], ['setup'], ['passwd']]) {
      const r = await sb.run([...args, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /\n(Examples|Getting started):\n {2}postern /, args.join(' '));
    }
  });
});

describe('cheap checks before the passphrase', () => {
  let inst: Installation;
  before(async () => {
    inst = await install({ secrets: [] });
    await inst.startDaemon();
  });
  after(() => inst.cleanup());
  const noPassFile = (): string[] => ['--passphrase-file', join(inst.sb.dir, 'never-read')];

  it('DAEMON_RUNNING is reported without reading the passphrase', async () => {
    const writers = [['anchor', 'new-journal', '--yes'], ['anchor', 'restore-journal', join(inst.sb.dir, 'backup'), '--yes'], ['anchor', 'release-key', 'tool', 'key'], ['anchor', 'close-gap', '--yes'], ['anchor', 'accept-vault', '--yes']];
    for (const args of [['daemon'], ...writers]) {
      const r = await inst.sb.run([...args, ...noPassFile()]);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /^postern: DAEMON_RUNNING: /m, `${args.join(' ')}: ${r.stderr}`);
    }
  });

  it('a bad name is refused before the value or the passphrase is read', async () => {
    const r = await inst.sb.run(['secret', 'add', 'My_Token', '--kind', 'http_bearer', '--from-file', join(inst.sb.dir, 'absent'), ...noPassFile()]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: INPUT_INVALID: "My_Token" is not a valid name: .* \(try "my_token"\)$/m);
  });

  it('every catalog problem is listed, one per line, with did-you-mean for a misspelt field', async () => {
    const file = join(inst.sb.dir, 'typos.yaml');
    await writeFile(file, [
      'targets:',
      '  api: { http: { origin: "https://api.example.com", credential: tok, auth: bearer } }',
      'tools:',
      '  get_status:',
      '    description: Read the status.',
      '    effect: read',
      '    aproval: none',
      '    revisions:',
      '      - revision: 1',
      '        input: { type: object, properties: {}, additionalProperties: false }',
      '        http: { target: api, method: GET, paht: /status }',
      '',
    ].join('\n'));
    const r = await inst.sb.run(['catalog', 'check', file]);
    assert.equal(r.code, 1);
    const lines = r.stderr.trim().split('\n');
    assert.match(lines[0]!, /^postern: CATALOG_INVALID: 4 problems:$/);
    assert.ok(lines.some((l) => /^ {2}.*typos\.yaml: tools\.get_status\.aproval: unknown field \(did you mean "approval"\?\) \(line 7\)$/.test(l)), r.stderr);
    assert.ok(lines.some((l) => /revisions\[0\]\.http\.paht: unknown field \(did you mean "path"\?\)/.test(l)), r.stderr);
    assert.ok(lines.some((l) => /tools\.get_status\.approval: is required/.test(l)), r.stderr);
    assert.equal(lines.length, 5);
  });

  it('the fast path of postern mcp and the commander path agree', () => {
    // `postern --passphrase-file F mcp` goes through commander; it must still be the relay (one line back).
    const init = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`;
    for (const args of [['mcp'], ['--passphrase-file', '/nonexistent', 'mcp']]) {
      const r = spawnSync(process.execPath, [CLI, ...args], { input: init, env: childEnv(inst.sb.home), encoding: 'utf8', timeout: 30_000 });
      const first = JSON.parse(r.stdout.split('\n')[0]!) as { id: number; result: { serverInfo: { name: string } } };
      assert.equal(first.id, 1, args.join(' '));
      assert.equal(typeof first.result.serverInfo.name, 'string');
    }
  });
});
