/**
 * A real HTTP (or HTTPS) server on 127.0.0.1 for executor tests. It keeps an
 * append-only log of every request it received (method, url, headers, body)
 * and counts TCP connections, so a test can assert that nothing left the
 * machine on a refused path (`requests.length === 0`, `connections === 0`).
 *
 * Built-in routes (by path):
 *   /echo               → 200 JSON {method, url, path, query, headers, body}
 *   /json               → 200 JSON {"ok":true,"items":[1,2,3]}
 *   /status/<code>      → that status, JSON body {"status": code}
 *   /redirect?to=URL[&status=302] → redirect with `location: URL`
 *   /slow-headers?ms=N  → waits N ms before answering
 *   /slow-body?ms=N     → sends headers and a first chunk, waits N ms, ends
 *   /huge?bytes=N       → streams N bytes of 'a' (honours backpressure; see hugeStats)
 *   /raw?hex=…&type=…   → exactly those bytes with that content type
 *   /headers?k=v…       → 200 with each query pair as a response header
 * Tests add their own with `route(path, handler)`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoggedRequest {
  readonly method: string;
  readonly url: string;
  /** Raw header pairs in arrival order (duplicates kept). */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

export interface HugeStats {
  bytesWritten: number;
  /** The client went away before the whole body was written. */
  abortedByClient: boolean;
}

export interface FakeHttpServer {
  readonly origin: string;
  readonly port: number;
  /** Append-only; entries are frozen. */
  readonly requests: readonly LoggedRequest[];
  /** A snapshot copy of the log. */
  log(): readonly LoggedRequest[];
  /** TCP connections accepted so far. */
  readonly connections: number;
  /** TCP connections open now (an accepted one counts until its socket has closed). */
  readonly openConnections: number;
  readonly hugeStats: HugeStats;
  route(path: string, handler: RouteHandler): void;
  /** Value of the first header `name` (any case) of request `i`. */
  header(i: number, name: string): string | undefined;
  close(): Promise<void>;
}

export interface FakeHttpOptions {
  /** PEM key and certificate: serve HTTPS instead of HTTP. */
  readonly tls?: { readonly key: string; readonly cert: string };
}

/** Waits `ms`, or less if the client goes away (so no timer outlives a test). */
const pause = (ms: number, res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    res.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });

export async function startFakeHttp(opts: FakeHttpOptions = {}): Promise<FakeHttpServer> {
  const requests: LoggedRequest[] = [];
  const routes = new Map<string, RouteHandler>();
  const sockets = new Set<Socket>();
  const hugeStats: HugeStats = { bytesWritten: 0, abortedByClient: false };
  let connections = 0;

  const builtIn: Record<string, RouteHandler> = {
    '/echo': (req, res, body) => {
      const url = new URL(req.url ?? '/', 'http://x');
      sendJson(res, 200, {
        method: req.method,
        url: req.url,
        path: url.pathname,
        query: [...url.searchParams],
        headers: pairs(req.rawHeaders),
        body: body.toString('utf8'),
      });
    },
    '/json': (_req, res) => sendJson(res, 200, { ok: true, items: [1, 2, 3] }),
    '/redirect': (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      res.writeHead(Number(q.get('status') ?? 302), { location: q.get('to') ?? '/' }).end();
    },
    '/slow-headers': async (req, res) => {
      await pause(Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 1000), res);
      if (!res.destroyed) sendJson(res, 200, { slow: true });
    },
    '/slow-body': async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      await pause(Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 1000), res);
      if (!res.destroyed) res.end('rest');
    },
    '/huge': async (req, res) => {
      const total = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('bytes') ?? 0);
      const chunk = Buffer.alloc(64 * 1024, 'a');
      // Stats describe the latest /huge response.
      hugeStats.bytesWritten = 0;
      hugeStats.abortedByClient = false;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
      res.on('close', () => {
        if (!res.writableFinished) hugeStats.abortedByClient = true;
      });
      let written = 0;
      while (written < total && !res.destroyed) {
        const part = chunk.subarray(0, Math.min(chunk.length, total - written));
        written += part.length;
        hugeStats.bytesWritten = written;
        if (!res.write(part)) await drainOrClose(res);
      }
      if (!res.destroyed) res.end();
    },
    '/raw': (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      res.writeHead(200, { 'content-type': q.get('type') ?? 'application/octet-stream' }).end(Buffer.from(q.get('hex') ?? '', 'hex'));
    },
    '/headers': (req, res) => {
      const q = new URL(req.url ?? '/', 'http://x').searchParams;
      for (const [k, v] of q) res.appendHeader(k, v);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    },
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push(Object.freeze({ method: req.method ?? '', url: req.url ?? '', headers: Object.freeze(pairs(req.rawHeaders)), body }));
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const status = /^\/status\/(\d{3})$/.exec(path)?.[1];
      const handler =
        routes.get(path) ?? builtIn[path] ?? (status === undefined ? undefined : (_q: IncomingMessage, r: ServerResponse) => sendJson(r, Number(status), { status: Number(status) }));
      if (handler === undefined) {
        sendJson(res, 404, { error: 'no route' });
        return;
      }
      Promise.resolve(handler(req, res, body)).catch(() => res.destroy());
    });
  };

  const server: Server = opts.tls === undefined ? createServer(handle) : createTlsServer({ key: opts.tls.key, cert: opts.tls.cert }, handle);
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A proxy client would send CONNECT; log it like any request, and refuse the
  // tunnel with a status (a bare close makes some clients retry at once, forever).
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    requests.push(Object.freeze({ method: 'CONNECT', url: req.url ?? '', headers: Object.freeze(pairs(req.rawHeaders)), body: Buffer.alloc(0) }));
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    origin: `${opts.tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    port,
    requests,
    log: () => [...requests],
    get connections() {
      return connections;
    },
    get openConnections() {
      return sockets.size;
    },
    hugeStats,
    route: (path, handler) => void routes.set(path, handler),
    header: (i, name) => requests[i]?.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

function pairs(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

export interface TestPki {
  /** PEM of the test CA (for NODE_EXTRA_CA_CERTS). */
  readonly caCert: string;
  readonly caFile: string;
  /** A leaf for `names` (DNS names and IPs) signed by the CA. */
  readonly key: string;
  readonly cert: string;
  /** A self-signed certificate nobody trusts. */
  readonly selfSigned: { readonly key: string; readonly cert: string };
  cleanup(): void;
}

/** Creates a throwaway CA and certificates with the openssl CLI (test use only). */
export function makeTestPki(names: readonly string[]): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'postern-pki-'));
  const f = (n: string): string => join(dir, n);
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=Postern Test CA', '-keyout', f('ca.key'), '-out', f('ca.pem'));
  ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=postern-test', '-keyout', f('leaf.key'), '-out', f('leaf.csr'));
  writeFileSync(f('leaf.ext'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  ssl('x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', f('leaf.ext'), '-out', f('leaf.pem'));
  return {
    caCert: readFileSync(f('ca.pem'), 'utf8'),
    caFile: f('ca.pem'),
    key: readFileSync(f('leaf.key'), 'utf8'),
    cert: readFileSync(f('leaf.pem'), 'utf8'),
    selfSigned: { key: readFileSync(f('ca.key'), 'utf8'), cert: readFileSync(f('ca.pem'), 'utf8') },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
