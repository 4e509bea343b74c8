// Authority (THREATS row 11): what a revision can reach, a stable digest, and
// widensAuthority that fails closed. Table cases plus fast-check properties:
// reflexive, narrowing never widens, any added element widens, and random
// pairs are never called "within" unless an independent oracle agrees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { authorityDigest, authorityOf, Effects, widensAuthority, type Authority } from '../../../src/contracts/index.ts';
import { catalog, objectSchema, str, tool, toolOf } from './helpers.ts';

const EMPTY: Authority = { effect: 'read', credentials: [], origins: [], methods: [], paths: [], requestMeaning: [], privateNetwork: 'refused', ssh: [], programs: [], commands: [] };

describe('authorityOf', () => {
  const c = catalog({
    create: tool([{ revision: 1, input: objectSchema({ o: str() }, ['o']), http: { target: 'api', method: 'POST', path: '/repos/{o}/issues' } }]),
    broad: tool([{ revision: 1, http_request: { target: 'api', methods: ['POST', 'GET'], paths: ['/b/{x}', '/a/{...rest}'] } }], { effect: 'destructive' }),
    deploy: tool([{ revision: 1, input: objectSchema({ p: { enum: ['/bin/b', '/bin/a'] }, b: str() }, ['p', 'b']), ssh: { target: 'preview', argv: ['{p}', '--', 'x{{y}}', '{b}'] } }], { effect: 'read' }),
  });
  it('HTTP tool', () => {
    const t = toolOf(c, 'create');
    assert.deepEqual(authorityOf(t, t.current, c), { ...EMPTY, effect: 'write', credentials: ['api-token'], origins: ['https://api.example.com:443'], methods: ['POST'], paths: ['/repos/{}/issues'] });
  });
  it('broad HTTP tool covers every method and pattern', () => {
    const t = toolOf(c, 'broad');
    assert.deepEqual(authorityOf(t, t.current), { ...EMPTY, effect: 'destructive', credentials: ['api-token'], origins: ['https://api.example.com:443'], methods: ['GET', 'POST'], paths: ['/a/{...}', '/b/{}'] });
  });
  it('SSH tool', () => {
    const t = toolOf(c, 'deploy');
    assert.deepEqual(authorityOf(t, t.current), { ...EMPTY, credentials: ['deploy-key'], ssh: [{ host: 'preview.internal', port: 22, user: 'deploy' }], programs: ['/bin/a', '/bin/b'], commands: [['{}', '--', 'x{{y}}', '{}']] });
  });
  it('digest ignores set order and changes with reach', () => {
    const a: Authority = { ...EMPTY, methods: ['GET', 'POST'], credentials: ['x', 'y'] };
    assert.equal(authorityDigest(a), authorityDigest({ ...a, methods: ['POST', 'GET'], credentials: ['y', 'x'] }));
    assert.notEqual(authorityDigest(a), authorityDigest({ ...a, methods: ['GET'] }));
    assert.match(authorityDigest(a), /^[0-9a-f]{64}$/);
  });
});

describe('widensAuthority, table', () => {
  const base: Authority = { ...EMPTY, effect: 'write', credentials: ['gh'], origins: ['https://api.github.com:443'], methods: ['GET', 'POST'], paths: ['/repos/{}/{}/issues', '/search/{...}'] };
  const cases: [string, Partial<Authority>, string[] | 'none'][] = [
    ['same', {}, 'none'],
    ['fewer methods', { methods: ['GET'] }, 'none'],
    ['specialized path', { paths: ['/repos/acme/{}/issues', '/search/code/x'] }, 'none'],
    ['lower effect', { effect: 'read' }, 'none'],
    ['new method', { methods: ['GET', 'DELETE'] }, ['new method DELETE']],
    ['new host', { origins: ['https://api2.example.com:443'] }, ['new host api2.example.com:443']],
    ['new port', { origins: ['https://api.github.com:8443'] }, ['new port api.github.com:8443']],
    ['new scheme', { origins: ['http://api.github.com:443'] }, ['new scheme http for api.github.com:443']],
    ['new credential', { credentials: ['gh-admin'] }, ['new credential gh-admin']],
    ['effect raised', { effect: 'destructive' }, ['effect write → destructive']],
    ['path not literally contained', { paths: ['/repos/{}/{}/hooks'] }, ['new path /repos/{}/{}/hooks']],
    ['wildcard not covered by one segment', { paths: ['/repos/{}/{...}'] }, ['new path /repos/{}/{...}']],
    ['bare prefix not covered by {...}', { paths: ['/search'] }, ['new path /search']],
    ['private network', { privateNetwork: 'allowed' }, ['private and loopback addresses allowed']],
    ['method override header added', { requestMeaning: ['header x-http-method-override: DELETE'] }, ['new request override header x-http-method-override: DELETE']],
  ];
  const partial: [string, string, boolean][] = [
    ['/a/v{}', '/a/vlit', true],
    ['/a/v{}', '/a/v{}x', false],
    ['/a/{}', '/a/x:y', false], // ":" cannot come out of an encoded value
    ['/a/{}', '/a/v{}', true],
    ['/a/{...}', '/a/b/{}/c', true],
    ['/a/{...}', '/a/', false],
  ];
  for (const [outer, inner, contained] of partial) {
    it(`${inner} ${contained ? 'is' : 'is not'} within ${outer}`, () => {
      assert.equal(widensAuthority({ ...EMPTY, paths: [outer] }, { ...EMPTY, paths: [inner] }).widens, !contained);
    });
  }
  for (const [name, change, expected] of cases) {
    it(name, () => {
      const w = widensAuthority(base, { ...base, ...change });
      assert.deepEqual(w.widens ? w.reasons : 'none', expected);
    });
  }
  const sshBase: Authority = { ...EMPTY, credentials: ['k'], ssh: [{ host: 'h', port: 22, user: 'deploy' }], programs: ['/srv/deploy.sh'], commands: [['/srv/deploy.sh', '{}', 'us-east']] };
  const sshCases: [string, Partial<Authority>, string[]][] = [
    ['new SSH host', { ssh: [{ host: 'prod', port: 22, user: 'deploy' }] }, ['new SSH host prod:22']],
    ['new SSH port', { ssh: [{ host: 'h', port: 2222, user: 'deploy' }] }, ['new SSH port h:2222']],
    ['new SSH user', { ssh: [{ host: 'h', port: 22, user: 'root' }] }, ['new SSH user root@h:22']],
    ['new program', { programs: ['/bin/rm'] }, ['new program /bin/rm']],
    ['literal became a placeholder', { commands: [['/srv/deploy.sh', '{}', '{}']] }, ['new command /srv/deploy.sh {} {}']],
  ];
  for (const [name, change, expected] of sshCases) {
    it(name, () => {
      const w = widensAuthority(sshBase, { ...sshBase, ...change });
      assert.deepEqual(w.widens ? w.reasons : [], expected);
    });
  }
});

// ---- properties ------------------------------------------------------------

const PATHS = ['/a', '/a/', '/a/{}', '/a/{}/b', '/a/{...}', '/{}', '/{...}', '/b/c', '/a/x', '/a/x/b', '/{}/{}', '/a/v{}'];
const ORIGINS = ['https://h1:443', 'https://h1:8443', 'http://h1:80', 'https://h2:443'];
const SSH = [{ host: 'h1', port: 22, user: 'u' }, { host: 'h1', port: 22, user: 'root' }, { host: 'h1', port: 2222, user: 'u' }, { host: 'h2', port: 22, user: 'u' }];
const MEANING = ['header x-http-method-override: DELETE', 'header x-http-method-override: GET', 'header x-forwarded-host: evil.example', 'query _method=PUT'];
const COMMANDS = [['/x', '{}'], ['/x', '{...}'], ['/x', 'lit'], ['/y'], ['{}', '--', '{...}']];

const authority = fc.record({
  effect: fc.constantFrom(...Effects),
  credentials: fc.subarray(['c1', 'c2', 'c3']),
  origins: fc.subarray(ORIGINS),
  methods: fc.subarray(['GET', 'POST', 'PUT', 'DELETE']),
  paths: fc.subarray(PATHS),
  requestMeaning: fc.subarray(MEANING),
  privateNetwork: fc.constantFrom('allowed' as const, 'refused' as const),
  ssh: fc.subarray(SSH),
  programs: fc.subarray(['/x', '/y', '/z']),
  commands: fc.subarray(COMMANDS),
});

/** Independent oracle: does some pattern of `outer` match this concrete path? */
function oracleMatches(outer: readonly string[], path: string): boolean {
  return outer.some((p) => {
    const re = p.split('/').map((seg) => (seg === '{}' ? '[^/]+' : seg === '{...}' ? '[^/]+(?:/[^/]+)*' : seg.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\}/g, '[^/]+'))).join('/');
    return new RegExp(`^${re}$`).test(path);
  });
}

/** Concrete paths a pattern reaches, sampled (the literal-brace-free pool keeps this simple). */
function samples(pattern: string): string[] {
  const fill = (token: string): string => pattern.split('/').map((seg) => (seg === '{...}' ? `${token}/${token}2` : seg.replace(/\{\}/g, token))).join('/');
  return [fill('zz'), fill('a'), fill('x'), fill('b'), fill('v')];
}

const rank = (e: string): number => (Effects as readonly string[]).indexOf(e);

describe('widensAuthority, properties', () => {
  it('reflexive: an authority never widens itself', () => {
    fc.assert(fc.property(authority, (a) => assert.deepEqual(widensAuthority(a, a), { widens: false })), { numRuns: 300 });
  });

  it('narrowing never widens', () => {
    const pair = authority.chain((a) =>
      fc.record({
        effect: fc.constantFrom(...Effects.filter((e) => rank(e) <= rank(a.effect))),
        credentials: fc.subarray(a.credentials),
        origins: fc.subarray(a.origins),
        methods: fc.subarray(a.methods),
        paths: fc.subarray(a.paths).map((ps) => ps.map((p) => p.replace('{}', 'lit'))),
        requestMeaning: fc.constant(a.requestMeaning),
        privateNetwork: fc.constantFrom(...(a.privateNetwork === 'allowed' ? (['allowed', 'refused'] as const) : (['refused'] as const))),
        ssh: fc.subarray(a.ssh),
        programs: fc.subarray(a.programs),
        commands: fc.subarray(a.commands),
      }).map((b) => [a, b] as const),
    );
    fc.assert(fc.property(pair, ([a, b]) => assert.equal(widensAuthority(a, b).widens, false)), { numRuns: 300 });
  });

  it('any added host, port, method, credential, user, command or request override widens', () => {
    const additions: [string, (a: Authority) => Authority | undefined][] = [
      ['credential', (a) => ({ ...a, credentials: [...a.credentials, 'fresh-cred'] })],
      ['host', (a) => ({ ...a, origins: [...a.origins, 'https://fresh.example:443'] })],
      ['port', (a) => (a.origins.length === 0 ? undefined : { ...a, origins: [...a.origins, a.origins[0]!.replace(/:\d+$/, ':65000')] })],
      ['method', (a) => ({ ...a, methods: [...a.methods, 'PATCH'] })],
      ['ssh host', (a) => ({ ...a, ssh: [...a.ssh, { host: 'fresh', port: 22, user: 'u' }] })],
      ['ssh user', (a) => (a.ssh.length === 0 ? undefined : { ...a, ssh: [...a.ssh, { ...a.ssh[0]!, user: 'fresh-user' }] })],
      ['ssh port', (a) => (a.ssh.length === 0 ? undefined : { ...a, ssh: [...a.ssh, { ...a.ssh[0]!, port: 65001 }] })],
      ['program', (a) => ({ ...a, programs: [...a.programs, '/fresh'] })],
      ['command', (a) => ({ ...a, commands: [...a.commands, ['/fresh', '{}']] })],
      ['request override', (a) => ({ ...a, requestMeaning: [...a.requestMeaning, 'header x-original-url: /admin'] })],
      ['removed request override', (a) => (a.requestMeaning.length === 0 ? undefined : { ...a, requestMeaning: a.requestMeaning.slice(1) })],
    ];
    fc.assert(
      fc.property(authority, fc.constantFrom(...additions), (a, [what, add]) => {
        const b = add(a);
        if (b === undefined) return;
        const w = widensAuthority(a, b);
        assert.ok(w.widens, `adding a ${what} must widen`);
      }),
      { numRuns: 400 },
    );
  });

  it('random pairs: "within" is only claimed when an oracle agrees', () => {
    fc.assert(
      fc.property(authority, authority, (a, b) => {
        if (widensAuthority(a, b).widens) return;
        assert.ok(rank(b.effect) <= rank(a.effect));
        for (const k of ['credentials', 'origins', 'methods', 'programs'] as const) for (const x of b[k]) assert.ok(a[k].includes(x), `${k} ${x}`);
        for (const e of b.ssh) assert.ok(a.ssh.some((x) => x.host === e.host && x.port === e.port && x.user === e.user));
        for (const c of b.commands) assert.ok(a.commands.some((x) => JSON.stringify(x) === JSON.stringify(c)));
        if (b.privateNetwork === 'allowed') assert.equal(a.privateNetwork, 'allowed');
        assert.deepEqual([...b.requestMeaning].sort(), [...a.requestMeaning].sort(), 'request meaning is exactly the same');
        for (const p of b.paths) for (const concrete of samples(p)) assert.ok(oracleMatches(a.paths, concrete), `${p} → ${concrete} not reachable through ${a.paths.join(' ')}`);
      }),
      { numRuns: 1000 },
    );
  });
});
