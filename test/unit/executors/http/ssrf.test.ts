import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from 'undici';
import { executeHttp } from '../../../../src/executors/http/index.js';
import { pinnedConnector } from '../../../../src/executors/http/connector.js';
import { PosternError } from '../../../../src/rules/errors.js';
import type { FakeHttpServer } from '../../../helpers/fake-http.js';
import { startFakeHttp } from '../../../helpers/fake-http.js';
import { credentials, refusal, spec } from './support.js';
import { waitFor } from '../../../helpers/wait.js';
import { connect, createServer, type AddressInfo } from 'node:net';
import type { buildConnector } from 'undici';

/**
 * THREATS row 6: the decision is made on the address actually connected.
 * Every refused row must leave the fake server's log empty.
 */
describe('SSRF: literal addresses in any encoding', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(async () => {
    await srv.close();
    assert.equal(srv.requests.length, 0);
    assert.equal(srv.connections, 0);
  });

  it('WHATWG URL parsing turns every numeric IPv4 spelling into the address it denotes', () => {
    for (const host of ['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '0x7f.1', '017700000001', '127.0.0.1']) {
      assert.equal(new URL(`http://${host}:8080`).origin, 'http://127.0.0.1:8080', host);
    }
    assert.equal(new URL('http://[::ffff:127.0.0.1]:8080').origin, 'http://[::ffff:7f00:1]:8080');
  });

  const port = (): number => srv.port;
  // Origins as the catalog normalizes them (new URL(x).origin), from many spellings.
  const spellings: [string, () => string][] = [
    ['127.0.0.1', () => `http://127.0.0.1:${port()}`],
    ['decimal 2130706433', () => new URL(`http://2130706433:${port()}`).origin],
    ['hex 0x7f000001', () => new URL(`http://0x7f000001:${port()}`).origin],
    ['octal 0177.0.0.1', () => new URL(`http://0177.0.0.1:${port()}`).origin],
    ['short 127.1', () => new URL(`http://127.1:${port()}`).origin],
    ['IPv4-mapped [::ffff:127.0.0.1]', () => new URL(`http://[::ffff:127.0.0.1]:${port()}`).origin],
    ['IPv4-mapped hex [::ffff:7f00:1]', () => `http://[::ffff:7f00:1]:${port()}`],
    ['IPv4-compatible [::127.0.0.1]', () => new URL(`http://[::127.0.0.1]:${port()}`).origin],
    ['NAT64 [64:ff9b::127.0.0.1]', () => new URL(`http://[64:ff9b::127.0.0.1]:${port()}`).origin],
    ['6to4 [2002:7f00:1::1]', () => `http://[2002:7f00:1::1]:${port()}`],
    ['[::1]', () => `http://[::1]:${port()}`],
    ['[::]', () => `http://[::]:${port()}`],
    ['0.0.0.0', () => `http://0.0.0.0:${port()}`],
    ['localhost (system resolver)', () => `http://localhost:${port()}`],
    ['metadata 169.254.169.254', () => 'http://169.254.169.254'],
    ['metadata, decimal 2852039166', () => new URL('http://2852039166').origin],
    ['metadata, IPv4-mapped', () => new URL('http://[::ffff:169.254.169.254]').origin],
    ['10.0.0.1', () => 'http://10.0.0.1'],
    ['172.16.5.4', () => 'http://172.16.5.4'],
    ['192.168.1.1', () => 'https://192.168.1.1'],
    ['CGNAT 100.64.0.1', () => 'http://100.64.0.1'],
    ['link-local [fe80::1]', () => 'http://[fe80::1]'],
    ['unique-local [fc00::1]', () => 'http://[fc00::1]'],
    ['unique-local [fd00:ec2::254]', () => 'http://[fd00:ec2::254]'],
    ['multicast 224.0.0.1', () => 'http://224.0.0.1'],
    ['broadcast 255.255.255.255', () => 'http://255.255.255.255'],
  ];
  for (const [name, origin] of spellings) {
    it(`refuses ${name}`, async () => {
      const e = await refusal(executeHttp(spec(origin()), { credential: credentials.bearer, allowPrivate: false }), 'EGRESS_BLOCKED');
      assert.equal(e.sideEffectStarted, false);
      assert.equal(typeof e.details['address'], 'string');
      assert.equal(typeof e.details['host'], 'string');
    });
  }
});

describe('SSRF: names that resolve to private addresses', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(() => srv.close());

  const answers: [string, string[]][] = [
    ['127.0.0.1', ['127.0.0.1']],
    ['10.0.0.7', ['10.0.0.7']],
    ['169.254.169.254', ['169.254.169.254']],
    ['::ffff:127.0.0.1', ['::ffff:127.0.0.1']],
    ['::1', ['::1']],
    ['a public address and a private one', ['93.184.216.34', '127.0.0.1']],
    ['a private address after a public one (IPv6 then IPv4)', ['2606:4700::1111', '192.168.0.10']],
    ['something that is not an IP', ['127.1']],
  ];
  for (const [name, addresses] of answers) {
    it(`refuses a host resolving to ${name}`, async () => {
      const asked: string[] = [];
      const e = await refusal(
        executeHttp(spec(`http://rebind.example:${srv.port}`), {
          credential: credentials.bearer,
          allowPrivate: false,
          resolve: (host) => {
            asked.push(host);
            return Promise.resolve(addresses);
          },
        }),
        'EGRESS_BLOCKED',
      );
      assert.equal(e.details['host'], 'rebind.example');
      assert.deepEqual(asked, ['rebind.example']);
      assert.equal(srv.requests.length, 0);
      assert.equal(srv.connections, 0);
    });
  }

  it('resolves once and connects to the checked address, keeping the Host header', async () => {
    let calls = 0;
    const res = await executeHttp(spec(`http://service.internal.test:${srv.port}`), {
      credential: null,
      allowPrivate: true,
      resolve: () => {
        calls++;
        // A rebinding resolver: the second answer would point elsewhere.
        return Promise.resolve(calls === 1 ? ['127.0.0.1'] : ['10.9.9.9']);
      },
    });
    assert.equal(calls, 1);
    assert.equal(res.connected_ip, '127.0.0.1');
    assert.equal(srv.header(srv.requests.length - 1, 'host'), `service.internal.test:${srv.port}`);
  });

  it('reports a resolver failure as TARGET_ERROR without a side effect', async () => {
    const e = await refusal(
      executeHttp(spec('http://nowhere.invalid'), {
        credential: null,
        allowPrivate: false,
        resolve: () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' })),
      }),
      'TARGET_ERROR',
    );
    assert.equal(e.sideEffectStarted, false);
    assert.equal(e.details['error'], 'ENOTFOUND');
  });

  it('times out a resolver that never answers (connect timeout, no side effect)', async () => {
    const e = await refusal(
      executeHttp(spec('http://slow-dns.test'), { credential: null, allowPrivate: false, resolve: () => new Promise(() => {}), timeouts: { connectMs: 100 } }),
      'TARGET_TIMEOUT',
    );
    assert.equal(e.sideEffectStarted, false);
  });
});

describe('SSRF: the connected address is checked again after connect', () => {
  let srv: FakeHttpServer;
  before(async () => {
    srv = await startFakeHttp();
  });
  after(() => srv.close());

  it('destroys a connection whose remote address is not allowed, before a byte is written', async () => {
    let connected = false;
    const connect = pinnedConnector({
      protocol: 'http:',
      host: 'public.example',
      address: '127.0.0.1', // as if a public-looking pin had landed on loopback
      port: srv.port,
      allowPrivate: false,
      connectTimeoutMs: 1000,
      onConnected: () => {
        connected = true;
      },
    });
    const err = await new Promise<Error | null>((resolve) => {
      connect({ hostname: 'public.example', protocol: 'http:', port: String(srv.port) }, (e, socket) => {
        socket?.destroy();
        resolve(e);
      });
    });
    assert.ok(err instanceof PosternError);
    assert.equal(err.code, 'EGRESS_BLOCKED');
    assert.equal(err.details['address'], '127.0.0.1');
    assert.equal(connected, false);
    // The server sees the connection open and then close; anything written on it would have
    // reached the server (and its request log) before the close.
    await waitFor(() => srv.connections === 1 && srv.openConnections === 0, () => `the server to see the connection open and close (${srv.connections} accepted, ${srv.openConnections} open)`, { timeoutMs: 10_000 });
    assert.equal(srv.connections, 1); // the TCP handshake happened …
    assert.equal(srv.requests.length, 0); // … but no request was written
  });

  it('surfaces that refusal unchanged through an undici Client, with no retry and no request', async () => {
    const connectionsBefore = srv.connections;
    const client = new Client(`http://public.example:${srv.port}`, {
      connect: pinnedConnector({ protocol: 'http:', host: 'public.example', address: '127.0.0.1', port: srv.port, allowPrivate: false, connectTimeoutMs: 1000 }),
    });
    try {
      await assert.rejects(client.request({ method: 'GET', path: '/echo' }), (e) => e instanceof PosternError && e.code === 'EGRESS_BLOCKED' && !e.sideEffectStarted);
    } finally {
      await client.destroy();
    }
    assert.equal(srv.connections, connectionsBefore + 1);
    assert.equal(srv.requests.length, 0);
  });

  it('destroys a connection that landed on another allowed address than the pinned one, before a byte is written', async () => {
    // A real listener on 127.0.0.2, and a route that delivers the pinned 127.0.0.1 there.
    let bytes = 0;
    let accepted = 0;
    const other = createServer((s) => {
      accepted++;
      s.on('data', (d: Buffer) => (bytes += d.length));
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.2', resolve));
    const port = (other.address() as AddressInfo).port;
    const elsewhere: buildConnector.connector = (_target, cb) => {
      const s = connect({ host: '127.0.0.2', port });
      s.once('connect', () => cb(null, s));
      s.once('error', (e) => cb(e, null));
    };
    let connected = false;
    const connector = pinnedConnector({ protocol: 'http:', host: 'x.test', address: '127.0.0.1', port, allowPrivate: true, connectTimeoutMs: 1000, base: elsewhere, onConnected: () => (connected = true) });
    try {
      const err = await new Promise<Error | null>((resolve) => connector({ hostname: 'x.test', protocol: 'http:', port: String(port) }, (e, s) => {
        s?.destroy();
        resolve(e);
      }));
      assert.ok(err instanceof PosternError, String(err));
      assert.equal(err.code, 'EGRESS_BLOCKED');
      assert.equal(err.details['reason'], 'address-changed');
      assert.equal(err.details['address'], '127.0.0.2');
      assert.equal(connected, false, 'the request was never allowed onto the socket');
      assert.equal(accepted, 1);
      assert.equal(bytes, 0);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('connects to the pinned address whatever host undici asks for', async () => {
    let remote = '';
    const connect = pinnedConnector({ protocol: 'http:', host: 'x.test', address: '127.0.0.1', port: srv.port, allowPrivate: true, connectTimeoutMs: 1000, onConnected: (ip) => (remote = ip) });
    const socket = await new Promise((resolve, reject) => {
      connect({ hostname: '10.0.0.1', protocol: 'http:', port: '1' }, (e, s) => (e ? reject(e) : resolve(s)));
    });
    (socket as { destroy(): void }).destroy();
    assert.equal(remote, '127.0.0.1');
  });
});
