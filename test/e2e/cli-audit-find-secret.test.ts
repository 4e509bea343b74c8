/**
 * `postern audit find-secret NAME` against a real daemon, a loopback target
 * and the official MCP client: a target that echoes the Authorization header
 * (a leak into a result), an agent that pastes the secret into its arguments
 * (a leak into arguments), an agent that types the marker text itself (not a
 * leak), another credential's leak (not this one's), and a rotation between
 * two leaks (the earlier value is told apart from the current one with
 * --unlock). The answer comes from what was recorded at redaction time; the
 * secret is never in the journal, the CLI output or the daemon log.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';

const FIRST = canary('first');
const SECOND = canary('second');
const OTHER = canary('other');

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
interface Found {
  credential: string;
  values_checked: boolean;
  exposed_calls: number;
  calls: { call_id: string; tool: string; in: string[]; value: string }[];
}

function catalogFor(origin: string) {
  const read = (path: string, target = 'api', input: Record<string, unknown> = { type: 'object', properties: {} }) => ({
    description: `GET ${path}.`,
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input, http: { target, method: 'GET', path, ...('note' in (input['properties'] as object) ? { query: { note: '{note}' } } : {}) } }],
  });
  return {
    targets: {
      api: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } },
      other: { http: { origin, credential: 'other-token', auth: 'bearer', allow_private: true } },
    },
    tools: {
      whoami: read('/whoami'),
      other_whoami: read('/whoami', 'other'),
      quiet: read('/quiet', 'api', { type: 'object', properties: { note: { type: 'string', maxLength: 200 } } }),
    },
  };
}

describe('postern audit find-secret', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  const ids: Record<string, string> = {};

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: FIRST,
      secrets: [{ name: 'other-token', kind: 'http_bearer', value: OTHER }],
      routes: {
        '/whoami': (req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ auth: req.headers.authorization ?? '' }));
        },
        '/quiet': (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"ok":true}');
        },
      },
      catalog: (_targets, target) => catalogFor(target.origin),
    }));
    agent = await inst.client();
  });

  after(async () => {
    try {
      for (const v of [FIRST, SECOND, OTHER]) inst.sb.assertNeverPrinted(v, 'a canary (CLI output, daemon log, journals)');
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const call = async (label: string, name: string, args: Record<string, unknown> = {}): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: args })) as Result;
    const id = r.structuredContent?.['call_id'];
    assert.equal(typeof id, 'string', JSON.stringify(r));
    ids[label] = id as string;
    return r;
  };
  const find = async (name: string, ...flags: string[]): Promise<Found> => {
    const r = await inst.sb.run(['audit', 'find-secret', name, '--json', ...flags]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Found;
  };
  const byLabel = (f: Found): Record<string, { in: string[]; value: string }> =>
    Object.fromEntries(Object.entries(ids).flatMap(([label, id]) => {
      const c = f.calls.find((x) => x.call_id === id);
      return c === undefined ? [] : [[label, { in: c.in, value: c.value }]];
    }));

  it('a credential never exposed: nothing found', async () => {
    const r = await call('quiet', 'quiet', { note: 'hello' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const f = await find('api-token');
    assert.equal(f.exposed_calls, 0);
    const text = await inst.sb.run(['audit', 'find-secret', 'api-token']);
    assert.match(text.stdout, /^credential api-token: no recorded exposure/m);
  });

  it('finds the echo, the pasted secret and the rotation; a typed marker and another credential are not this one', async () => {
    let r = await call('echo-first', 'whoami');
    assert.equal((r.structuredContent?.['body'] as { auth: string }).auth, '[REDACTED:api-token]');
    r = await call('pasted', 'quiet', { note: `see ${FIRST}` });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'SECRET_IN_ARGUMENTS');
    r = await call('typed-marker', 'quiet', { note: 'the token is [REDACTED:api-token]' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    r = await call('other', 'other_whoami');
    assert.equal((r.structuredContent?.['body'] as { auth: string }).auth, '[REDACTED:other-token]');

    const rot = await inst.sb.run(['secret', 'rotate', 'api-token', '--stdin', '--passphrase-file', inst.passFile], { input: SECOND });
    assert.equal(rot.code, 0, rot.stderr);
    r = await call('echo-second', 'whoami');
    assert.equal(http.header(http.requests.length - 1, 'authorization'), `Bearer ${SECOND}`);

    const byName = await find('api-token');
    assert.equal(byName.values_checked, false);
    assert.deepEqual(byLabel(byName), {
      'echo-first': { in: ['result'], value: 'unchecked' },
      pasted: { in: ['arguments'], value: 'unchecked' },
      'echo-second': { in: ['result'], value: 'unchecked' },
    });
    assert.equal(byName.exposed_calls, 3, 'the typed marker and the other credential are not exposures of api-token');

    const checked = await find('api-token', '--unlock', '--passphrase-file', inst.passFile);
    assert.equal(checked.values_checked, true);
    assert.deepEqual(byLabel(checked), {
      'echo-first': { in: ['result'], value: 'earlier_value' },
      pasted: { in: ['arguments'], value: 'earlier_value' },
      'echo-second': { in: ['result'], value: 'current' },
    });
    const other = await find('other-token', '--unlock', '--passphrase-file', inst.passFile);
    assert.deepEqual(other.calls.map((c) => [c.call_id, c.value]), [[ids['other'], 'current']]);

    const text = await inst.sb.run(['audit', 'find-secret', 'api-token', '--unlock', '--passphrase-file', inst.passFile]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^credential api-token: found in 3 calls; 1 with the CURRENT value: rotate it/m);
    assert.match(text.stdout, /CALL +AT +TOOL +SESSION +FOUND IN +VALUE/);
    const show = await inst.sb.run(['audit', 'show', ids['echo-first']!]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /secrets redacted +1/);
    assert.match(show.stdout, /api-token +in result/);
  });

  it('refuses a name that is not a credential name', async () => {
    const r = await inst.sb.run(['audit', 'find-secret', 'Bad Name']);
    assert.equal(r.code, 2, 'a usage error exits 2');
    assert.match(r.stderr, /USAGE: "Bad Name" is not a credential name/);
  });
});
