/**
 * A kill -9 of the daemon at every file event of the refresh-token
 * write-back loses nothing. The token endpoint rotates the refresh token on
 * every use and refuses the one it replaced (an append-only log of what it
 * was sent); the daemon is killed at its Nth file event inside the
 * write-back (POSTERN_TEST_KILL_SCOPE: only that path's events count), for
 * N = 1, 2, … until a call completes without reaching N. After each kill a
 * plain start and a call must succeed: the daemon sends the token the
 * endpoint rotated to, never the refused one. The rotated tokens never
 * appear in the clear in any file of the home.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { cp, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { install, type Installation } from '../helpers/daemon.js';
import { encodingsOf } from '../helpers/cli.js';
import { KILL_AT_FILE_EVENT, KILL_SCOPE } from '../../src/vault/file-events.js';
import { REFRESH_TOKEN_WRITE_BACK } from '../../src/daemon/services/refresh-token-store.js';

const RT1 = `CANARY-rt1-${randomBytes(15).toString('base64url')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

const catalogFor = (origin: string) => ({
  targets: { rt: { http: { origin, credential: 'rt-oauth', auth: { oauth_refresh_token: { token_url: `${origin}/oauth/refresh` } }, allow_private: true } } },
  tools: {
    list_things: {
      description: 'Read things.',
      effect: 'read',
      approval: 'none',
      revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'rt', method: 'GET', path: '/api/things' } }],
    },
  },
});

/** Every file under `dir`, for the no-plaintext check. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe('a kill -9 at every file event of the refresh-token write-back', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let pristine: string;
  /** The refresh token the endpoint accepts now; each use replaces it and the used one is refused. */
  let valid = RT1;
  /** Append-only: what each refresh request got. */
  const refreshLog: ('rotated' | 'refused')[] = [];
  const issuedRefresh: string[] = [];
  const accessTokens: string[] = [];

  before(async () => {
    http = await startFakeHttp();
    http.route('/oauth/refresh', (_req, res, body) => {
      const sent = new URLSearchParams(body.toString()).get('refresh_token') ?? '';
      if (sent !== valid) {
        refreshLog.push('refused');
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'invalid_grant' }));
        return;
      }
      refreshLog.push('rotated');
      valid = `CANARY-rt-next-${randomBytes(15).toString('base64url')}`;
      issuedRefresh.push(valid);
      const token = `CANARY-at-${randomBytes(18).toString('base64url')}`;
      accessTokens.push(token);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600, refresh_token: valid }));
    });
    http.route('/api/things', (req: IncomingMessage, res) => {
      const ok = accessTokens.includes(/^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '');
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { things: ['a'] } : { message: 'Bad credentials' }));
    });
    inst = await install({ secrets: [{ name: 'rt-oauth', kind: 'oauth_refresh_token', value: RT1, flags: ['--client-id', 'public-app'] }] });
    await inst.acceptCatalog(catalogFor(http.origin));
    // One start and stop first, so the pristine home has its journal and anchor.
    await inst.startDaemon();
    await inst.stopDaemon();
    pristine = join(inst.sb.dir, 'pristine');
    await cp(inst.sb.home, pristine, { recursive: true, preserveTimestamps: true });
  });

  after(async () => {
    try {
      for (const v of [RT1, ...issuedRefresh, ...accessTokens]) inst.sb.assertNeverPrinted(v, 'a refresh or access token');
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const restore = async (): Promise<void> => {
    await rm(inst.sb.home, { recursive: true, force: true });
    await cp(pristine, inst.sb.home, { recursive: true, preserveTimestamps: true });
    valid = RT1;
  };

  /** One call through a fresh agent; 'killed' when the daemon died under it (the shim answers DAEMON_UNAVAILABLE, then the exit is seen). */
  async function callOnce(): Promise<Result | 'killed'> {
    const daemon = inst.daemon!;
    const died = new Promise<'killed'>((resolve) => {
      if (daemon.exitCode !== null || daemon.signalCode !== null) resolve('killed');
      else daemon.once('exit', () => resolve('killed'));
    });
    const agent = await inst.client();
    const call = agent.callTool({ name: 'list_things', arguments: {} }) as Promise<Result>;
    call.catch(() => undefined);
    let r: Result | 'killed' = await Promise.race([call, died]);
    await agent.close().catch(() => undefined);
    if (r !== 'killed' && r.structuredContent?.['error_code'] === 'DAEMON_UNAVAILABLE') r = await died;
    if (r === 'killed') {
      assert.equal(daemon.signalCode, 'SIGKILL', `the daemon died otherwise than by the kill: ${inst.daemonLog}`);
      inst.daemon = null;
    }
    return r;
  }

  /** Nothing of any refresh token in the clear, in any encoding, in any file of the home. */
  async function assertSealed(where: string): Promise<void> {
    const forms = [RT1, ...issuedRefresh].flatMap((t) => encodingsOf(t));
    for (const f of await filesUnder(inst.sb.home)) {
      const text = (await readFile(f)).toString('latin1');
      for (const form of forms) assert.ok(!text.includes(form), `${where}: a refresh token in the clear in ${f}`);
    }
  }

  it('every kill point holds: the next start sends the rotated token and the call succeeds', async () => {
    let events = 0;
    for (let at = 1; at < 100; at++) {
      await restore();
      const where = `killed at file event ${at} of the write-back`;
      await inst.startDaemon([], { [KILL_AT_FILE_EVENT]: String(at), [KILL_SCOPE]: REFRESH_TOKEN_WRITE_BACK });
      const seen = refreshLog.length;
      const first = await callOnce();
      assert.deepEqual(refreshLog.slice(seen), ['rotated'], `${where}: the endpoint rotated the token (the old one is refused from now on)`);
      if (first !== 'killed') {
        assert.equal(first.isError, undefined, `the write-back without a kill: ${JSON.stringify(first)}`);
        await inst.stopDaemon();
        events = at - 1;
        break;
      }
      await assertSealed(where);
      await inst.startDaemon();
      const again = await callOnce();
      assert.notEqual(again, 'killed');
      assert.equal((again as Result).isError, undefined, `${where}: the call after a restart: ${JSON.stringify(again)}\n${inst.daemonLog}`);
      assert.deepEqual(refreshLog.slice(seen), ['rotated', 'rotated'], `${where}: the restarted daemon sent the rotated token, never the refused one`);
      await inst.stopDaemon();
      await assertSealed(`${where}, after the restart`);
    }
    // One append (write, fsync), the vault save (temp written, renamed, directory synced), the drop (the same three).
    assert.ok(events >= 8, `the write-back made ${events} file events`);
  });
});
