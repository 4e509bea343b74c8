/**
 * AWS Signature Version 4 through the daemon: an agent calls a loopback
 * "AWS API" that verifies every request with an independent SigV4 verifier
 * (test/helpers/sigv4-verifier.ts) holding its own copy of the secret — a
 * query read, a JSON write, temporary credentials with a session token, and
 * a key the service does not accept. The secret access key and the session
 * token never reach the agent, the CLI output, the daemon log or the journals.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { verifySigV4, type VerifierKey } from '../helpers/sigv4-verifier.js';
import { encodingsOf } from '../helpers/cli.js';

const SECRET = `CANARY-aws-${randomBytes(15).toString('base64url')}`;
const TEMP_SECRET = `CANARY-tmp-${randomBytes(15).toString('base64url')}`;
const TOKEN = `CANARY-tok-${randomBytes(24).toString('base64url')}`;
const WRONG = `CANARY-wrong-${randomBytes(15).toString('base64url')}`;
const KEYS: Record<string, VerifierKey> = {
  AKIDPOSTERNTEST0001: { accessKeyId: 'AKIDPOSTERNTEST0001', secretAccessKey: SECRET },
  ASIAPOSTERNTEMP0002: { accessKeyId: 'ASIAPOSTERNTEMP0002', secretAccessKey: TEMP_SECRET, sessionToken: TOKEN },
  AKIDPOSTERNWRONG003: { accessKeyId: 'AKIDPOSTERNWRONG003', secretAccessKey: `${WRONG}-the-service-has-another` },
};

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

function catalogFor(origin: string) {
  const target = (credential: string) => ({ http: { origin, credential, auth: { aws_sigv4: { region: 'eu-west-1', service: 'execute-api' } }, allow_private: true } });
  const list = (t: string) => ({
    description: 'List things of an owner.',
    effect: 'read',
    approval: 'none',
    revisions: [{ revision: 1, input: { type: 'object', required: ['owner'], properties: { owner: { type: 'string', pattern: '^[a-z ]{1,20}$' } } }, http: { target: t, method: 'GET', path: '/prod/things', query: { owner: '{owner}', 'max-items': '10' } } }],
  });
  return {
    targets: { aws: target('aws-key'), aws_temp: target('aws-temp'), aws_wrong: target('aws-wrong') },
    tools: {
      list_things: list('aws'),
      list_things_temp: list('aws_temp'),
      list_things_wrong: list('aws_wrong'),
      put_thing: {
        description: 'Create a thing.',
        effect: 'write',
        approval: 'none',
        revisions: [{ revision: 1, input: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 40 } } }, http: { target: 'aws', method: 'POST', path: '/prod/things', body: { name: '{name}' } } }],
      },
    },
  };
}

describe('daemon: AWS Signature Version 4', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  const verdicts: string[] = [];
  const results: string[] = [];

  before(async () => {
    http = await startFakeHttp();
    http.route('/prod/things', (req, res, body) => {
      const auth = /Credential=([A-Z0-9]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const key = KEYS[auth];
      const v = key === undefined ? { ok: false as const, why: 'unknown key' } : verifySigV4(req, body, key, { region: 'eu-west-1', service: 'execute-api', now: new Date() });
      verdicts.push(v.ok ? 'ok' : v.why);
      res.writeHead(v.ok ? 200 : 403, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v.ok ? { ok: true, method: req.method, url: req.url } : { message: 'The request signature we calculated does not match the signature you provided.' }));
    });
    inst = await install({
      secrets: [
        { name: 'aws-key', kind: 'aws_sigv4', value: SECRET, flags: ['--access-key-id', 'AKIDPOSTERNTEST0001'] },
        { name: 'aws-wrong', kind: 'aws_sigv4', value: WRONG, flags: ['--access-key-id', 'AKIDPOSTERNWRONG003'] },
      ],
    });
    const tokenFile = await inst.sb.file('token', `${TOKEN}\n`);
    const add = await inst.sb.run(['secret', 'add', 'aws-temp', '--kind', 'aws_sigv4', '--access-key-id', 'ASIAPOSTERNTEMP0002', '--session-token-file', tokenFile, '--stdin', '--passphrase-file', inst.passFile], { input: TEMP_SECRET });
    assert.equal(add.code, 0, add.stderr);
    await inst.acceptCatalog(catalogFor(http.origin));
    await inst.startDaemon();
    agent = await inst.client();
  });

  after(async () => {
    try {
      const exported = await inst.sb.run(['audit', 'export']);
      assert.equal(exported.code, 0, exported.stderr);
      const list = await inst.sb.run(['secret', 'list', '--passphrase-file', inst.passFile]);
      assert.match(list.stdout, /aws-key +aws_sigv4 .*access_key_id=AKIDPOSTERNTEST0001/);
      for (const v of [SECRET, TEMP_SECRET, TOKEN, WRONG]) {
        inst.sb.assertNeverPrinted(v, 'an AWS secret (CLI output, daemon log, journals)');
        for (const form of encodingsOf(v)) assert.ok(!results.join('\n').includes(form), 'an AWS secret reached the agent');
      }
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const call = async (name: string, args: Record<string, unknown>): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: args })) as Result;
    results.push(JSON.stringify(r));
    return r;
  };

  it('a read with a query: the service verifies the signature; the secret never goes on the wire', async () => {
    const r = await call('list_things', { owner: 'ann smith' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(verdicts, ['ok']);
    const sent = http.requests.at(-1)!;
    assert.match(sent.headers.find(([n]) => n === 'authorization')?.[1] ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDPOSTERNTEST0001\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(sent).includes(SECRET), 'the secret key itself is never sent');
  });

  it('a write with a JSON body is signed over the body', async () => {
    const r = await call('put_thing', { name: 'widget', idempotency_key: `k-${randomBytes(6).toString('hex')}` });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(verdicts.at(-1), 'ok');
  });

  it('temporary credentials: the session token is sent and signed', async () => {
    const r = await call('list_things_temp', { owner: 'bob' });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(verdicts.at(-1), 'ok');
    assert.equal(http.requests.at(-1)!.headers.find(([n]) => n === 'x-amz-security-token')?.[1], TOKEN);
    assert.ok(!results.at(-1)!.includes(TOKEN), 'the token is not in the result');
  });

  it('a key the service does not accept: a target error, nothing secret in it', async () => {
    const r = await call('list_things_wrong', { owner: 'eve' });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'TARGET_ERROR');
    assert.equal(verdicts.at(-1), 'signature does not match');
  });
});
