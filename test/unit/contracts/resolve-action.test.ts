// resolveAction: byte-exact requests and commands; path values confined to one
// segment; header injection refused; SSH arguments one-to-one with no option
// smuggling (THREATS rows 1, 5, 7); broad tools limited to their declared reach.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actionDigest, resolveAction, validateArguments, type Catalog, type ResolveResult } from '../../../src/contracts/index.ts';
import { catalog, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

function run(c: Catalog, name: string, raw: unknown, idempotencyKey?: string): ResolveResult {
  const rev = toolOf(c, name).current;
  const v = validateArguments(rev.input, raw);
  assert.ok(v.ok, v.ok ? '' : JSON.stringify(v.issues));
  return resolveAction(rev, v.value, { idempotencyKey });
}

const http = (h: Obj, input: Obj): Obj => tool([{ revision: 1, input, http: { target: 'api', ...h } }]);
const ssh = (argv: string[], input: Obj): Obj => tool([{ revision: 1, input, ssh: { target: 'preview', argv } }]);

describe('HTTP, byte-exact', () => {
  const c = catalog({
    create: http(
      { method: 'POST', path: '/repos/{owner}/{repo}/issues', query: { dry: '{dry}', v: '2' }, headers: { Accept: 'application/vnd.x+json', 'X-Trace': 't-{trace}' }, body: { title: '{title}', n: '{n}', tags: '{tags}', meta: { src: 'postern', note: 'by {owner}' } } },
      objectSchema({ owner: str(), repo: str(), dry: { type: 'boolean' }, trace: str(), title: str(), n: { type: 'integer' }, tags: { type: 'array', items: str() } }, ['owner', 'repo', 'title']),
    ),
  });

  it('resolves every byte, omitting absent optional parts', () => {
    const r = run(c, 'create', { owner: 'ac me', repo: 'wídget', title: 'Tab\there "q"', n: 3 }, 'key-00000001');
    assert.deepEqual(r, {
      kind: 'resolved',
      action: {
        kind: 'http',
        tool: 'create',
        revision: 1,
        method: 'POST',
        path: '/repos/ac%20me/w%C3%ADdget/issues',
        target: 'api',
        credential: 'api-token',
        auth: { kind: 'bearer' },
        origin: 'https://api.example.com',
        host: 'api.example.com',
        port: 443,
        query: [['v', '2']],
        url: 'https://api.example.com/repos/ac%20me/w%C3%ADdget/issues?v=2',
        headers: [['accept', 'application/vnd.x+json'], ['content-type', 'application/json'], ['idempotency-key', 'key-00000001']],
        body: { title: 'Tab\there "q"', n: 3, meta: { src: 'postern', note: 'by ac me' } },
        bodyText: '{"meta":{"note":"by ac me","src":"postern"},"n":3,"title":"Tab\\there \\"q\\""}',
      },
    });
  });

  it('query values and typed body values', () => {
    const r = run(c, 'create', { owner: 'o', repo: 'r', title: 't', dry: true, trace: 'a&b=c', tags: ['x', 'y'] });
    assert.equal(r.kind === 'resolved' && r.action.kind === 'http' ? r.action.url : '', 'https://api.example.com/repos/o/r/issues?dry=true&v=2');
    assert.deepEqual(r.kind === 'resolved' && r.action.kind === 'http' ? r.action.headers[1] : [], ['x-trace', 't-a&b=c']);
    assert.equal(r.kind === 'resolved' && r.action.kind === 'http' ? r.action.bodyText : '', '{"meta":{"note":"by o","src":"postern"},"tags":["x","y"],"title":"t"}');
  });

  it('the action digest is stable and changes with any byte', () => {
    const a = run(c, 'create', { owner: 'o', repo: 'r', title: 't' });
    const b = run(c, 'create', { repo: 'r', title: 't', owner: 'o' });
    const d = run(c, 'create', { owner: 'o', repo: 'r', title: 'T' });
    assert.ok(a.kind === 'resolved' && b.kind === 'resolved' && d.kind === 'resolved');
    assert.equal(actionDigest(a.action), actionDigest(b.action));
    assert.notEqual(actionDigest(a.action), actionDigest(d.action));
  });
});

describe('path parameters stay inside one segment', () => {
  const c = catalog({ get: http({ method: 'GET', path: '/files/{name}/raw' }, objectSchema({ name: str() }, ['name'])) });
  const cases: [string, string | RegExp][] = [
    ['report.txt', '/files/report.txt/raw'],
    ['a b', '/files/a%20b/raw'],
    ['ñ😀', '/files/%C3%B1%F0%9F%98%80/raw'],
    ["x!'()*", '/files/x%21%27%28%29%2A/raw'],
    ['%41', '/files/%2541/raw'],
    ['...', '/files/.../raw'],
    ['.', /"\." or "\.\." path segment/],
    ['..', /"\." or "\.\." path segment/],
    ['%2e%2e', /"\." or "\.\." path segment/],
    ['%2E.', /"\." or "\.\." path segment/],
    ['%252e%252e', /"\." or "\.\." path segment/],
    ['a/b', /"\/" or "\\"/],
    ['..%2f..%2fetc', /"\/" or "\\"/],
    ['%252f', /"\/" or "\\"/],
    ['a\\b', /"\/" or "\\"/],
    ['', /empty path segment/],
    ['line\nbreak', /control character/],
  ];
  for (const [value, expected] of cases) {
    it(`${JSON.stringify(value)} → ${String(expected)}`, () => {
      const r = run(c, 'get', { name: value });
      if (typeof expected === 'string') assert.equal(r.kind === 'resolved' && r.action.kind === 'http' ? r.action.path : JSON.stringify(r), expected);
      else {
        assert.equal(r.kind, 'refused');
        assert.equal(r.kind === 'refused' ? r.field : '', 'name');
        assert.match(r.kind === 'refused' ? r.problem : '', expected);
      }
    });
  }

  it('a composed segment cannot become a dot segment', () => {
    const c2 = catalog({ get: http({ method: 'GET', path: '/x/{a}{b}' }, objectSchema({ a: str(), b: str() }, ['a', 'b'])) });
    assert.equal(run(c2, 'get', { a: '.', b: '.' }).kind, 'refused');
    assert.equal(run(c2, 'get', { a: '.', b: 'x' }).kind, 'resolved');
  });
});

describe('headers', () => {
  const c = catalog({ h: http({ method: 'GET', path: '/h', headers: { 'X-Note': '{note}' } }, objectSchema({ note: str() }, ['note'])) });
  for (const bad of ['a\r\nX-Evil: 1', 'a\nb', 'a\rb', 'nul\u0000', 'é', ' padded', 'bell\u0007']) {
    it(`refuses header value ${JSON.stringify(bad)}`, () => {
      const r = run(c, 'h', { note: bad });
      assert.equal(r.kind, 'refused');
      assert.equal(r.kind === 'refused' ? r.field : '', 'note');
    });
  }
  it('keeps a plain value', () => assert.equal(run(c, 'h', { note: 'ok\tfine' }).kind, 'resolved'));
});

describe('SSH argv', () => {
  const input = objectSchema({ branch: str(), files: { type: 'array', items: str() }, opt: str({ 'x-postern-allow-dash': true }), n: { type: 'integer' } }, ['branch', 'opt', 'n']);
  const c = catalog({
    deploy: ssh(['/srv/deploy.sh', '--ref={branch}', '{branch}', '{opt}', '{n}', '--', '{...files}'], input),
  });

  it('one argument per value, byte-exact, quoted for the remote shell', () => {
    const r = run(c, 'deploy', { branch: "x'; rm -rf / #$(id)`id`", files: ['a b', '-rf', '\n'], opt: '-v', n: 2 });
    assert.ok(r.kind === 'resolved' && r.action.kind === 'ssh');
    assert.deepEqual(r.action.argv, ['/srv/deploy.sh', "--ref=x'; rm -rf / #$(id)`id`", "x'; rm -rf / #$(id)`id`", '-v', '2', '--', 'a b', '-rf', '\n']);
    assert.equal(r.action.command, "'/srv/deploy.sh' '--ref=x'\\''; rm -rf / #$(id)`id`' 'x'\\''; rm -rf / #$(id)`id`' '-v' '2' '--' 'a b' '-rf' '\n'");
    assert.deepEqual([r.action.host, r.action.port, r.action.user, r.action.credential], ['preview.internal', 22, 'deploy', 'deploy-key']);
  });

  const refused: [string, Obj, string][] = [
    ['a value starting with "-" before "--"', { branch: '-x', opt: 'o', n: 1 }, 'branch'],
    ['a negative number before "--"', { branch: 'b', opt: 'o', n: -1 }, 'n'],
    ['NUL', { branch: 'a\u0000b', opt: 'o', n: 1 }, 'branch'],
    ['NUL in a spliced value', { branch: 'b', opt: 'o', n: 1, files: ['ok', 'x\u0000'] }, 'files[1]'],
  ];
  for (const [name, args, field] of refused) {
    it(`refuses ${name}`, () => {
      const r = run(c, 'deploy', args);
      assert.equal(r.kind, 'refused');
      assert.equal(r.kind === 'refused' ? r.field : '', field);
    });
  }

  it('an empty splice adds no argument', () => {
    const r = run(c, 'deploy', { branch: 'b', opt: 'o', n: 1 });
    assert.deepEqual(r.kind === 'resolved' && r.action.kind === 'ssh' ? r.action.argv : [], ['/srv/deploy.sh', '--ref=b', 'b', 'o', '1', '--']);
  });

  it('a program from a closed list', () => {
    const c2 = catalog({ svc: ssh(['{program}', '{...args}'], objectSchema({ program: { enum: ['/usr/bin/systemctl', '/usr/bin/journalctl'] }, args: { type: 'array', items: str({ pattern: '^[a-z.@-]+$' }), maxItems: 5 } }, ['program'])) });
    const r = run(c2, 'svc', { program: '/usr/bin/journalctl', args: ['nginx.service'] });
    assert.deepEqual(r.kind === 'resolved' && r.action.kind === 'ssh' ? r.action.argv : [], ['/usr/bin/journalctl', 'nginx.service']);
    assert.equal(run(c2, 'svc', { program: '/usr/bin/systemctl', args: ['-u'] }).kind, 'refused');
  });
});

describe('broad HTTP tool (http_request)', () => {
  const c = catalog({
    gh: tool([{ revision: 1, http_request: { target: 'api', methods: ['GET', 'POST'], paths: ['/repos/{owner}/{repo}/issues', '/repos/{owner}/{repo}/issues/{number}', '/search/{...rest}'], headers: { Accept: 'application/json' } } }]),
  });
  const ok: [Obj, string, string?][] = [
    [{ method: 'GET', path: '/repos/o/r/issues', query: { state: 'open', q: 'a b&c' } }, 'https://api.example.com/repos/o/r/issues?q=a%20b%26c&state=open'],
    [{ method: 'GET', path: '/repos/o%20x/r/issues/7' }, 'https://api.example.com/repos/o%20x/r/issues/7'],
    [{ method: 'GET', path: '/search/code/deep/er' }, 'https://api.example.com/search/code/deep/er'],
    [{ method: 'POST', path: '/repos/o/r/issues', body: { title: 't', labels: ['a'] } }, 'https://api.example.com/repos/o/r/issues', '{"labels":["a"],"title":"t"}'],
  ];
  for (const [args, url, body] of ok) {
    it(`${String(args['method'])} ${String(args['path'])}`, () => {
      const r = run(c, 'gh', args);
      assert.ok(r.kind === 'resolved' && r.action.kind === 'http', JSON.stringify(r));
      assert.equal(r.action.url, url);
      assert.equal(r.action.bodyText, body);
      assert.deepEqual(r.action.headers[0], ['accept', 'application/json']);
    });
  }
  const refused: [Obj, RegExp][] = [
    [{ method: 'GET', path: '/repos/o/r/hooks' }, /matches none of the allowed patterns/],
    [{ method: 'GET', path: '/repos/o/r/issues/../../../admin' }, /"\." or "\.\."/],
    [{ method: 'GET', path: '/repos/o/r/issues/%2e%2e' }, /"\." or "\.\."/],
    [{ method: 'GET', path: '/repos/o%2fx/r/issues' }, /"\/" or "\\"/],
    [{ method: 'GET', path: '/repos//r/issues' }, /empty segment/],
    [{ method: 'GET', path: '/repos/o/r/issues?x=1' }, /"\?" or "#"/],
    [{ method: 'GET', path: '/search' }, /matches none/],
    [{ method: 'GET', path: '/repos/o/r/issues', body: {} }, /GET request cannot have a body/],
    [{ method: 'GET', path: '/repos/ø/r/issues' }, /must be percent-encoded/],
  ];
  for (const [args, re] of refused) {
    it(`refuses ${String(args['method'])} ${String(args['path'])}`, () => {
      const r = run(c, 'gh', args);
      assert.equal(r.kind, 'refused');
      assert.match(r.kind === 'refused' ? r.problem : '', re);
    });
  }
  it('the agent cannot set the credential query parameter', () => {
    const q = catalog({ q: tool([{ revision: 1, http_request: { target: 'qapi', methods: ['GET'], paths: ['/x'] } }]) });
    const r = run(q, 'q', { method: 'GET', path: '/x', query: { api_key: 'mine' } });
    assert.match(r.kind === 'refused' ? r.problem : '', /reserved for the credential/);
    const g = run(q, 'q', { method: 'GET', path: '/x' });
    assert.ok(g.kind === 'resolved');
    assert.match(actionDigest(g.action), /^[0-9a-f]{64}$/); // no body: still digestible
  });

  it('refuses methods outside the closed list at validation', () => {
    const v = validateArguments(toolOf(c, 'gh').current.input, { method: 'DELETE', path: '/repos/o/r/issues' });
    assert.equal(v.ok, false);
  });
});
