/**
 * `postern catalog check|show|accept` end to end: the release gate fails where
 * a change is unsafe, acceptance needs the passphrase, an edited catalog stays
 * pending, and a tampered accepted copy or record is detected.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cliSandbox, type CliSandbox } from '../helpers/cli.js';

const targets = { api: { http: { origin: 'https://api.example.com', credential: 'api-token', auth: 'bearer' } } };
const input = (props: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: props, required });
const r1 = { revision: 1, input: input({ title: { type: 'string', maxLength: 100 } }, ['title']), http: { target: 'api', method: 'POST', path: '/issues', body: { title: '{title}' } } };
const tool = (revisions: unknown[]) => ({ create_issue: { description: 'Create an issue.', effect: 'write', approval: 'session', revisions } });
const catalogText = (revisions: unknown[]) => stringify({ targets, tools: tool(revisions) });

describe('postern catalog', () => {
  let sb: CliSandbox;
  let g: string[];
  let catalogPath: string;

  before(async () => {
    sb = await cliSandbox();
    const pf = await sb.file('pass', 'catalog-test-passphrase\n');
    g = ['--passphrase-file', pf];
    assert.equal((await sb.run(['init', ...g])).code, 0);
    assert.equal((await sb.run(['secret', 'add', 'api-token', '--kind', 'http_bearer', '--stdin', ...g], { input: 'tok-123456' })).code, 0);
    catalogPath = join(sb.home, 'catalog.yaml');
  });
  after(() => sb.cleanup());

  it('reports a missing catalog', async () => {
    const r = await sb.run(['catalog', 'check']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: CATALOG_NOT_FOUND: /m);
  });

  it('names the file, the path and the problem of an invalid catalog', async () => {
    const bad = await sb.file('bad.yaml', stringify({ targets, tools: { t: { description: 'x', effect: 'sideways', approval: 'none', revisions: [r1] } } }));
    const r = await sb.run(['catalog', 'check', bad]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: CATALOG_INVALID: [\s\S]*bad\.yaml.*tools\.t\.effect/m);
  });

  it('checks, shows and accepts a first catalog', async () => {
    await writeFile(catalogPath, catalogText([r1]));
    const check = await sb.run(['catalog', 'check']);
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /Release gate passed/);
    let show = await sb.run(['catalog', 'show']);
    assert.match(show.stdout, /status: unaccepted/);
    assert.doesNotMatch(check.stdout, /No changes/, 'a first catalog is never "No changes"');
    assert.match(check.stdout, /target_added|target api added/);
    const unconfirmed = await sb.run(['catalog', 'accept', ...g]);
    assert.equal(unconfirmed.code, 2, 'accept without a terminal needs a confirmation');
    // A first catalog cannot take --yes, so the message names the flag that works.
    assert.match(unconfirmed.stderr, /^postern: USAGE: no terminal to confirm, and nothing trusted precedes this catalog: pass --digest [0-9a-f]{64} after reviewing the report above$/m);
    assert.doesNotMatch(unconfirmed.stderr, /--yes/);
    const blind = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(blind.code, 2, 'a first catalog cannot be accepted unseen with --yes');
    assert.match(blind.stdout, /First catalog of this home: every target and tool below is an addition that widens authority/);
    assert.match(blind.stdout, /new tool create_issue \(write, approval session\): new credential api-token, new host api\.example\.com:443, new method POST, new path \/issues/);
    const digest = /candidate: .*, sha256 ([0-9a-f]{64})/.exec(blind.stdout)?.[1];
    assert.ok(digest, blind.stdout);
    assert.match(blind.stderr, new RegExp(`USAGE: .*--yes cannot accept it unseen.*--digest ${digest}`));
    const wrong = await sb.run(['catalog', 'accept', '--digest', 'f'.repeat(64), ...g]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /CATALOG_PENDING: .*not the file you reviewed/);
    const acc = await sb.run(['catalog', 'accept', '--digest', digest, ...g]);
    assert.equal(acc.code, 0, acc.stderr);
    assert.match(acc.stdout, /accepted catalog [0-9a-f]{16}… as acceptance #1 \(1 tools\)/);
    show = await sb.run(['catalog', 'show', '--verify', ...g]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /status: accepted\nhistory: 1 authenticated acceptance, chain verified/);
    assert.match(show.stdout, /create_issue\s+r1/);
    const json = JSON.parse((await sb.run(['catalog', 'show', '--json'])).stdout) as { status: string; tools: unknown[] };
    assert.equal(json.tools.length, 1);
  });

  it('refuses a catalog naming a credential the vault does not have', async () => {
    const orig = await readFile(catalogPath, 'utf8');
    await writeFile(catalogPath, orig.replace('credential: api-token', 'credential: nope'));
    const r = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /CATALOG_INVALID: .*nope/);
    await writeFile(catalogPath, orig);
  });

  it('a misspelt credential is an unknown credential with a suggestion, not an authority widening', async () => {
    const orig = await readFile(catalogPath, 'utf8');
    await writeFile(catalogPath, orig.replace('credential: api-token', 'credential: api-tokn'));
    const r = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: CATALOG_INVALID: .*targets\.api\.http\.credential: unknown credential "api-tokn" \(did you mean "api-token"\?\)/m);
    assert.doesNotMatch(r.stdout + r.stderr, /RELEASE_GATE_FAILED|authority_widening/);
    await writeFile(catalogPath, orig);
  });

  it('refuses a catalog whose target needs another kind of credential than the vault holds', async () => {
    const orig = await readFile(catalogPath, 'utf8');
    assert.match(orig, /auth: bearer/);
    await writeFile(catalogPath, orig.replace('auth: bearer', 'auth: basic'));
    const r = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^postern: CREDENTIAL_KIND_MISMATCH: .*api-token.*http_bearer.*http_basic/m);
    assert.match((await sb.run(['catalog', 'show'])).stdout, /status: pending/, 'nothing was accepted');
    await writeFile(catalogPath, orig);
  });

  it('fails the gate on a breaking change without a policy; the edit stays pending', async () => {
    const r2 = {
      ...r1,
      revision: 2,
      input: input({ title: { type: 'string', maxLength: 100 }, region: { enum: ['eu', 'us'] } }, ['title', 'region']),
      http: { ...r1.http, body: { title: '{title}', region: '{region}' } },
    };
    await writeFile(catalogPath, catalogText([r1, r2]));
    const check = await sb.run(['catalog', 'check']);
    assert.equal(check.code, 1);
    assert.match(check.stdout, /breaking/);
    assert.match(check.stderr, /^postern: RELEASE_GATE_FAILED: /m);
    const json = await sb.run(['catalog', 'check', '--json']);
    assert.equal((JSON.parse(json.stdout) as { ok: boolean }).ok, false);
    const acc = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(acc.code, 1);
    const show = await sb.run(['catalog', 'show', '--verify', ...g]);
    assert.match(show.stdout, /status: pending/);
    assert.match(show.stdout, /create_issue\s+r1/, 'the accepted revision is still the one in use');
  });

  it('passes with an adapt policy; --against-journal names the old calls a tightening would break', async () => {
    const r2 = (maxLength: number) => ({
      ...r1,
      revision: 2,
      input: input({ title: { type: 'string', maxLength }, region: { enum: ['eu', 'us'] } }, ['title', 'region']),
      http: { ...r1.http, body: { title: '{title}', region: '{region}' } },
      previous: { policy: 'adapt', defaults: { region: 'eu' } },
    });
    const history = await sb.file('history.jsonl', [
      JSON.stringify({ tool: 'create_issue', revision: 1, raw_arguments: { title: 'short' } }),
      JSON.stringify({ tool: 'create_issue', revision: 1, raw_arguments: { title: 'a title far longer than ten' } }),
      JSON.stringify({ tool: 'create_issue', revision: 1, raw_arguments: { title: 'x', colour: 'never valid' } }),
    ].join('\n'));
    await writeFile(catalogPath, catalogText([r1, r2(10)]));
    const check = await sb.run(['catalog', 'check', '--against-journal', history, '--json']);
    assert.equal(check.code, 1);
    const report = JSON.parse(check.stdout) as { ok: boolean; historical: { checked: number; skipped_invalid: number }; historical_failures: { index: number; problem: string }[] };
    assert.equal(report.ok, false);
    assert.deepEqual(report.historical_failures.map((f) => f.index), [1], 'only the long title breaks');
    assert.equal(report.historical.skipped_invalid, 1, 'a call that never was valid is not a regression');
    assert.equal(JSON.stringify(report).includes('far longer'), false, 'raw values are not echoed in the report');
    await writeFile(catalogPath, catalogText([r1, r2(100)]));
    const ok = await sb.run(['catalog', 'check', '--against-journal', history]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const acc = await sb.run(['catalog', 'accept', '--yes', ...g]);
    assert.equal(acc.code, 0, acc.stderr);
  });

  it('detects a tampered accepted copy and a forged record', async () => {
    const copy = join(sb.home, 'catalog.accepted.yaml');
    const original = await readFile(copy, 'utf8');
    await writeFile(copy, original.replace('method: POST', 'method: DELETE'));
    let show = await sb.run(['catalog', 'show', '--verify', ...g]);
    assert.equal(show.code, 1);
    assert.match(show.stderr, /^postern: CATALOG_UNAUTHENTICATED: /m);
    await writeFile(copy, original);
    const rec = join(sb.home, 'catalog.accepted.json');
    const stored = JSON.parse(await readFile(rec, 'utf8')) as { record: { accepted_at: string } };
    stored.record.accepted_at = '2000-01-01T00:00:00.000Z';
    await writeFile(rec, JSON.stringify(stored));
    show = await sb.run(['catalog', 'show', '--verify', ...g]);
    assert.equal(show.code, 1);
    assert.match(show.stdout, /status: alarm \(record_forged\)/);
    assert.match(show.stderr, /^postern: CATALOG_UNAUTHENTICATED: /m);
  });
});
