/**
 * Secrets change while the daemon runs (HTTP): `postern secret rotate|rm|add`
 * against the built CLI while a real daemon serves an MCP agent, with a
 * loopback target that logs every request. Proves that the next call sends
 * the value now in the vault (the target's log), that a call in flight ends
 * with the value it started with, that a retired value a target cached is
 * redacted when echoed, that `rm` of a credential in use needs confirmation
 * and then fails its tools with CREDENTIAL_MISSING (nothing sent, no approval
 * card) while the daemon still restarts, and that a vault file the daemon
 * cannot adopt (sealed under another key, or an older generation) locks it
 * instead of leaving it on stale secrets. Every canary, in every encoding, is
 * searched in the CLI output, the daemon log, the journals and the results.
 *
 * The test waits for events (the daemon's "vault generation N adopted" line,
 * the target's request log), never for durations.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { cliSandbox, encodingsOf, TEST_VAULT_OPTIONS } from '../helpers/cli.js';
import { openVault } from '../../src/vault/index.js';
import { waitFor } from '../helpers/wait.js';
import { PASSPHRASE, type Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';

const TOKENS = { first: canary('first'), second: canary('second'), third: canary('third'), fourth: canary('fourth'), readded: canary('readded') };
const OTHER = canary('other');
const key = (): string => `key-${randomBytes(8).toString('hex')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

function catalogFor(origin: string) {
  const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties: props, required });
  const read = (path: string, target = 'api') => ({ description: `GET ${path}.`, effect: 'read', approval: 'none', revisions: [{ revision: 1, input: obj({}), http: { target, method: 'GET', path } }] });
  return {
    targets: {
      api: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } },
      other: { http: { origin, credential: 'other-token', auth: 'bearer', allow_private: true } },
    },
    tools: {
      whoami: read('/whoami'),
      hold: read('/hold'),
      other_read: read('/json', 'other'),
      remove_item: {
        description: 'Delete an item (per-call approval).',
        effect: 'destructive',
        approval: 'per-call',
        revisions: [{ revision: 1, input: obj({ id: { type: 'string', pattern: '^[a-z0-9]{1,20}$' } }, ['id']), http: { target: 'api', method: 'DELETE', path: '/echo', query: { id: '{id}' } } }],
      },
    },
  };
}

describe('daemon: secrets change while it runs (HTTP)', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  let agent: Client;
  /** Vault generation: init = 1, then one per saved change (a catalog acceptance saves one too). */
  let generation = 0;
  /** Every result the agent received, searched for canaries at the end. */
  const results: string[] = [];
  /** The first Authorization header the target ever saw: it "cached" it and echoes it forever. */
  let cached: string | undefined;
  let releaseHold: (() => void) | undefined;

  before(async () => {
    const whoami = (req: IncomingMessage, res: ServerResponse): void => {
      const auth = req.headers.authorization ?? '';
      cached ??= auth;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ auth, cached }));
    };
    generation = 4; // init, two secrets, and the acceptance mark the catalog acceptance saves in the vault
    ({ http, inst } = await httpFixture({
      token: TOKENS.first,
      secrets: [{ name: 'other-token', kind: 'http_bearer', value: OTHER }],
      routes: {
        '/whoami': whoami,
        '/hold': async (req, res) => {
          await new Promise<void>((resolve) => (releaseHold = resolve));
          whoami(req, res);
        },
      },
      catalog: (_targets, target) => catalogFor(target.origin),
    }));
    agent = await inst.client();
  });

  after(async () => {
    try {
      const exported = await inst.sb.run(['audit', 'export', '--passphrase-file', inst.passFile]);
      assert.equal(exported.code, 0, exported.stderr);
      assert.ok(exported.stdout.includes('vault_changed'), 'the journal records each adopted generation');
      const all = results.join('\n');
      for (const [what, value] of [...Object.entries(TOKENS), ['other', OTHER] as const]) {
        inst.sb.assertNeverPrinted(value, `the ${what} token (CLI output, daemon log, journals)`);
        for (const form of encodingsOf(value)) assert.ok(!all.includes(form), `the ${what} token reached the agent`);
      }
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  const g = (): string[] => ['--passphrase-file', inst.passFile];
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<Result> => {
    const r = (await agent.callTool({ name, arguments: args })) as Result;
    results.push(JSON.stringify(r));
    return r;
  };
  const facts = (r: Result): Record<string, unknown> => r.structuredContent ?? {};
  const lastAuth = (): string | undefined => http.header(http.requests.length - 1, 'authorization');

  /** waitFor, with the daemon's log in the failure message. */
  const untilLogged = (cond: () => boolean, what: string): Promise<void> => waitFor(cond, () => `${what}\n${inst.daemonLog}`);
  const adopted = (gen: number) => (): boolean => inst.daemonLog.includes(`vault generation ${gen} adopted`);
  const fileGeneration = async (): Promise<number> => {
    const v = await openVault(join(inst.sb.home, 'vault.pvlt'), Buffer.from(PASSPHRASE), TEST_VAULT_OPTIONS);
    try {
      return v.generation;
    } finally {
      v.lock();
    }
  };

  async function secret(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const r = await inst.sb.run(['secret', ...args, ...g()], input === undefined ? {} : { input });
    return r;
  }
  async function rotate(value: string): Promise<void> {
    const r = await secret(['rotate', 'api-token', '--stdin'], value);
    assert.equal(r.code, 0, r.stderr);
    generation = await fileGeneration(); // what this save wrote (the daemon's own first-start save moved the count too)
  }

  it('rotate: the next call sends the new token; the old one, echoed by a target that cached it, is redacted', async () => {
    let r = await call('whoami');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(lastAuth(), `Bearer ${TOKENS.first}`);

    await rotate(TOKENS.second);
    // No waiting: a call re-checks the vault file before it takes its credential.
    const before = http.requests.length;
    r = await call('whoami');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(http.requests.length, before + 1);
    assert.equal(lastAuth(), `Bearer ${TOKENS.second}`, 'the target received the rotated token');
    const body = facts(r)['body'] as { auth: string; cached: string };
    assert.equal(body.auth, '[REDACTED:api-token]');
    assert.equal(body.cached, '[REDACTED:api-token]', 'the retired token a target echoes is still redacted');
    await untilLogged(adopted(generation), 'the daemon logs the adopted generation');
    assert.match(inst.daemonLog, /rotated api-token/);
  });

  it('several rotations while a call is in flight: it ends with the token it started with; the next call uses the last one', async () => {
    const pending = call('hold');
    await untilLogged(() => releaseHold !== undefined, 'the held request reached the target');
    const held = http.requests.length - 1;
    assert.equal(http.header(held, 'authorization'), `Bearer ${TOKENS.second}`);
    await rotate(TOKENS.third);
    await rotate(TOKENS.fourth);
    // Adopted by the watcher alone (no call has started since).
    await untilLogged(adopted(generation), 'the watcher adopts the last generation');
    releaseHold?.();
    const r = await pending;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const body = facts(r)['body'] as { auth: string };
    assert.equal(body.auth, '[REDACTED:api-token]', 'the in-flight call echoes the token it sent, redacted');
    assert.equal(http.requests.length, held + 1, 'the in-flight call was sent once');

    const next = await call('whoami');
    assert.equal(next.isError, undefined, JSON.stringify(next));
    assert.equal(lastAuth(), `Bearer ${TOKENS.fourth}`);
    for (const t of [TOKENS.first, TOKENS.second, TOKENS.third]) {
      assert.ok(!http.requests.slice(held + 1).some((q) => JSON.stringify(q.headers).includes(t)), 'no retired token is sent again');
    }
  });

  it('rm of a credential in use: refused without --yes (SECRET_IN_USE), nothing removed', async () => {
    const r = await secret(['rm', 'api-token']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^postern: SECRET_IN_USE: /);
    assert.match(r.stderr, /hold, remove_item, whoami/);
    assert.match(r.stderr, /--yes/);
    const ok = await call('whoami');
    assert.equal(ok.isError, undefined, 'the credential is still there');
  });

  it('rm --yes: warns, then those tools fail with CREDENTIAL_MISSING, nothing sent, no approval asked; other tools still work', async () => {
    const r = await secret(['rm', 'api-token', '--yes']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /warning: .*hold, remove_item, whoami.*CREDENTIAL_MISSING/);
    generation = await fileGeneration(); // what this save wrote (the daemon's own first-start save moved the count too)
    const before = http.requests.length;
    for (const [tool, args] of [['whoami', {}], ['remove_item', { id: 'a1', idempotency_key: key() }]] as const) {
      const res = await call(tool, args);
      assert.equal(res.isError, true, JSON.stringify(res));
      assert.equal(facts(res)['error_code'], 'CREDENTIAL_MISSING');
      assert.equal(facts(res)['side_effect_started'], false);
      assert.match(String(facts(res)['message']), /postern secret add api-token/);
    }
    assert.equal(http.requests.length, before, 'nothing was sent');
    const op = await inst.operator();
    try {
      assert.deepEqual(await op.request('approvals.list', {}), [], 'no approval card for a call that cannot run');
    } finally {
      op.close();
    }
    const other = await call('other_read');
    assert.equal(other.isError, undefined, JSON.stringify(other));
    await untilLogged(adopted(generation), 'the removal is adopted');
    assert.match(inst.daemonLog, /removed api-token/);
  });

  it('after rm the daemon restarts; add brings the tools back without a restart', async () => {
    assert.equal(await inst.stopDaemon(), 0);
    // Retired values are redacted for the life of the daemon that saw them retire, not across a
    // restart (docs/threat-model.md): the target forgets what it cached here.
    cached = undefined;
    await inst.startDaemon();
    agent = await inst.client();
    let r = await call('whoami');
    assert.equal(facts(r)['error_code'], 'CREDENTIAL_MISSING');
    const added = await secret(['add', 'api-token', '--kind', 'http_bearer', '--stdin'], TOKENS.readded);
    assert.equal(added.code, 0, added.stderr);
    // The generation the file now holds (a daemon's own saves — the journal mark, remembered values — move it too).
    generation = await fileGeneration();
    r = await call('whoami');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(lastAuth(), `Bearer ${TOKENS.readded}`);
    assert.equal((facts(r)['body'] as { cached: string }).cached, '[REDACTED:api-token]');
    await untilLogged(adopted(generation), 'the addition is adopted');
    assert.match(inst.daemonLog, /added api-token/);
  });

  it('a vault file the daemon cannot adopt (older generation; another key) locks it: VAULT_LOCKED, nothing sent; the older copy is refused at restart until accepted', async () => {
    const vault = join(inst.sb.home, 'vault.pvlt');
    const older = join(inst.sb.dir, 'vault-older.pvlt');
    copyFileSync(vault, older);
    await rotate(canary('unused'));
    await untilLogged(adopted(generation), 'the rotation is adopted');
    // Put the older generation back, atomically as a writer would.
    copyFileSync(older, `${vault}.restore`);
    renameSync(`${vault}.restore`, vault);
    const before = http.requests.length;
    let r = await call('whoami');
    assert.equal(facts(r)['error_code'], 'VAULT_LOCKED', JSON.stringify(r));
    assert.match(String(facts(r)['message']), /went back to generation .*restart the daemon/);
    assert.equal(http.requests.length, before);
    await untilLogged(() => inst.daemonLog.includes('vault locked (the vault file went back'), 'the daemon logs why it locked');

    // The running daemon anchored the generation it adopted, so a restart on the older copy is
    // refused too; the operator accepts the older vault on purpose, and it starts on it.
    assert.equal(await inst.stopDaemon(), 0);
    await assert.rejects(inst.startDaemon(), /VAULT_ROLLED_BACK: the vault is generation \d+, older than generation \d+ recorded in the journal anchor/);
    inst.daemon = null;
    const accepted = await inst.sb.run(['anchor', 'accept-vault', '--yes', '--passphrase-file', inst.passFile]);
    assert.equal(accepted.code, 0, accepted.stdout + accepted.stderr);
    await inst.startDaemon();
    agent = await inst.client();
    r = await call('whoami');
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.equal(lastAuth(), `Bearer ${TOKENS.readded}`);

    // A vault sealed under another data key (as after a passphrase change that makes a new one).
    const foreign = await cliSandbox();
    try {
      const pf = await foreign.file('pass', `${PASSPHRASE}\n`);
      assert.equal((await foreign.run(['init', '--passphrase-file', pf])).code, 0);
      const add = await foreign.run(['secret', 'add', 'api-token', '--kind', 'http_bearer', '--stdin', '--passphrase-file', pf], { input: TOKENS.fourth });
      assert.equal(add.code, 0, add.stderr);
      copyFileSync(join(foreign.home, 'vault.pvlt'), `${vault}.restore`);
      renameSync(`${vault}.restore`, vault);
    } finally {
      await foreign.cleanup();
    }
    await untilLogged(() => inst.daemonLog.includes('no longer opens with the key this daemon holds'), 'the watcher notices the foreign file');
    const n = http.requests.length;
    r = await call('whoami');
    assert.equal(facts(r)['error_code'], 'VAULT_LOCKED');
    assert.match(String(facts(r)['message']), /restart the daemon/);
    assert.equal(http.requests.length, n);
  });
});
