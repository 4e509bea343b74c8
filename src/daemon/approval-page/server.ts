/**
 * The approval page's own listener (never the agent's HTTP listener): static
 * files, the page's proof of itself, pairing, the page's state, its event
 * stream, decisions and revocations.
 *
 *   GET  /  /app.js  /device.js  /app.css   the page (static; strict CSP, no inline script);
 *                                 `/` carries a view token only when the browser navigated to it
 *   POST /api/hello  {challenge}  the page key's signature over the challenge, origin and run (no device)
 *   POST /api/pair   {code, public_key, view, signature}   a one-time code → a device
 *   GET  /api/state               cards, activity, devices, the run fingerprint   (device)
 *   GET  /api/events              "changed" pings (an event stream)                (device)
 *   POST /api/decide {card_id, digest, nonce, verdict, scope?, reason?, seen?}     (device)
 *   POST /api/revoke {id}         revokes a paired device                          (device)
 *   POST /api/passkey/options     opens a passkey registration for the device      (device; localhost only)
 *   POST /api/passkey/register {response}   the passkey the browser made         (device; localhost only)
 *   GET  /manifest.webmanifest  /icon.svg  /icon-192.png  /icon-512.png   (static: installable as an app)
 *
 * Invariants: every request passes the gate first (gate.ts: Host, Origin,
 * Sec-Fetch-Site, method, content type) and a service worker's script fetch
 * is refused; every answer carries PAGE_HEADERS; no cookie is set and none is
 * read; a device request carries the device id, a view token this run issued
 * to a real navigation, and a counter, signed with the device's key over the
 * origin, the run, the method, the path and the body's digest (proof.ts) — a
 * counter is good once, a run's requests are worthless in any other run; a
 * decision also needs a nonce issued for that card and device (consumed by
 * its first use), the card's digest, and a card that is not stale, and then
 * goes through the approval queue's own `decide` — the path a TUI or CLI
 * decision takes — attributed to `device:<id>`; pairing and decisions are
 * rate-limited; an approval of a card that needs presence also carries a
 * passkey assertion over the card's digest, the run and the nonce
 * (presence.ts); a revoked device is refused at its next request and its event
 * streams are closed.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import type { ApprovalQueue } from '../../approvals/queue.js';
import { approvalNotFound } from '../../approvals/resolved.js';
import type { Clock } from '../../clock/index.js';
import type { PairedDevice } from '../../home/approval-devices.js';
import type { DeviceView } from '../../protocol/operator/index.js';
import type { ActivityView } from '../../protocol/operator/index.js';
import { isPosternError, PosternError, type ErrorCode } from '../../rules/errors.js';
import type { EventBus } from '../services/events.js';
import { readBody } from '../http/node-bridge.js';
import { DEVICE_HEADER, type DeviceRegistry } from './devices.js';
import { judgePageRequest, PAGE_HEADERS, pageOrigins, type PageAddress } from './gate.js';
import { DecisionNonces } from './nonces.js';
import { B64URL, bodyDigest, devicePublicKey, newRunId, pairMessage, requestMessage, runFingerprint, signHello, verifies, Views, type PageIdentity } from './proof.js';
import { RateLimit } from './rate.js';
import { pageActivity, pageCard, type PageState } from './view.js';
import { AssertionSchema, PasskeyDesk, presenceChallenge, type PageAt } from './presence.js';
import { packageFile } from '../../package-files.js';

const MAX_BODY = 16 * 1024;
const VIEW_HEADER = 'x-postern-view';
const PROOF_HEADER = 'x-postern-proof';
/** Where index.html carries the view token (the daemon fills it in for a navigation only). */
const VIEW_SLOT = 'content="postern-view-token"';

export interface ApprovalPageOptions {
  readonly bind: string;
  readonly port: number;
  readonly tls: { readonly key: string; readonly cert: string } | null;
  readonly clock: Clock;
  readonly queue: ApprovalQueue;
  readonly bus: EventBus;
  readonly devices: DeviceRegistry;
  readonly activity: () => ActivityView[];
  readonly journal: (type: 'device_paired' | 'passkey_added', data: Record<string, unknown>) => void;
  /** The page's identity key (proof.ts): derived from the vault, pinned by every paired browser. */
  readonly identity: PageIdentity;
  /** Revokes a device as the operator channel does (saved, journaled, its streams closed). */
  readonly revoke: (id: string) => Promise<DeviceView>;
}

export interface ApprovalPageEndpoint {
  readonly url: string;
  readonly port: number;
  /** This run's short code (proof.ts): the page shows it once the daemon proved itself. */
  readonly runFingerprint: string;
  /** Closes the event streams of a device that was just revoked. */
  dropDevice(id: string): void;
  close(): Promise<void>;
}

const STATIC: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/device.js': { file: 'device.js', type: 'text/javascript; charset=utf-8' },
  '/presence.js': { file: 'presence.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  '/manifest.webmanifest': { file: 'manifest.webmanifest', type: 'application/manifest+json; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  '/icon-192.png': { file: 'icon-192.png', type: 'image/png' },
  '/icon-512.png': { file: 'icon-512.png', type: 'image/png' },
};

const b64 = (n: number) => z.string().length(n).regex(B64URL);
const HelloSchema = z.strictObject({ challenge: b64(43) });
const PairSchema = z.strictObject({ code: z.string().min(1).max(64).regex(/^[A-Za-z0-9 -]+$/), public_key: b64(87), view: b64(32), signature: b64(86) });
const RevokeSchema = z.strictObject({ id: z.string().regex(/^[0-9a-f]{16}$/) });
const DecideSchema = z.strictObject({
  card_id: z.string().min(1).max(200),
  digest: z.string().min(1).max(128),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  verdict: z.enum(['approve', 'deny']),
  scope: z.enum(['once', 'session']).optional(),
  reason: z.string().max(500).nullable().optional(),
  /** The presentation the page had in view whole (presentation.ts); the queue checks it. */
  seen: z.strictObject({ presentation: z.string().regex(/^[0-9a-f]{64}$/) }).optional(),
  /** A passkey's assertion over the card's presence challenge (presence.ts), for a tool that needs presence. */
  presence: AssertionSchema.optional(),
});

const STATUS: Partial<Record<ErrorCode, number>> = {
  DEVICE_UNPAIRED: 401, DEVICE_PROOF_INVALID: 401, DEVICE_NOT_FOUND: 404, PAIRING_REFUSED: 403, PAGE_RATE_LIMITED: 429, DECISION_STALE: 409, DECISION_REPLAYED: 409,
  DECISION_NONCE_INVALID: 409, APPROVAL_MISMATCH: 409, APPROVAL_UNSEEN: 409, APPROVAL_NOT_FOUND: 410, USAGE: 400, PAGE_REFUSED: 403,
  PRESENCE_REQUIRED: 409, PRESENCE_INVALID: 409, PRESENCE_UNAVAILABLE: 409,
};

function loadStatic(): Map<string, Buffer> {
  const dir = packageFile('daemon/approval-page/static/');
  return new Map(Object.values(STATIC).map((s) => [s.file, readFileSync(new URL(s.file, dir))]));
}

/** One JSON answer, with the page's headers. */
function send(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)), ...extra });
  res.end(text);
}

/** A refusal as the page reads it: its stable code and one line; anything else is INTERNAL, never a stack. */
function fail(res: ServerResponse, e: unknown): void {
  const err = isPosternError(e) ? e : new PosternError('INTERNAL', 'the approval page failed to handle the request');
  const details = Object.keys(err.details).length > 0 ? { details: err.details } : {};
  send(res, STATUS[err.code] ?? 500, { error: { code: err.code, message: err.message.slice(0, 500), ...details } });
}

async function readRaw(req: IncomingMessage): Promise<Buffer> {
  const body = await readBody(req, MAX_BODY);
  if (body.kind === 'oversized') throw new PosternError('USAGE', 'the request body is too large');
  return body.bytes;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new PosternError('USAGE', 'the request body is not JSON');
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A device's request, proven: the device and the body it signed. */
interface Proven {
  readonly device: PairedDevice;
  readonly body: Buffer;
}

const proofFailed = (why: string): PosternError => new PosternError('DEVICE_PROOF_INVALID', `${why}: nothing was done; reload the page`);

/** What the page's routes share: the run, the devices' proofs, the nonces, the rate limits, the stale marks and the open event streams. */
class PageRoutes {
  /** Where the listener is (its port once bound): the gate checks Host and Origin against it. */
  address: PageAddress;
  readonly streams = new Set<{ device: string; res: ServerResponse }>();
  /** This run's id: every device proof names it, so nothing signed for one run works in another. */
  readonly run = newRunId();
  readonly #o: ApprovalPageOptions;
  readonly #files = loadStatic();
  readonly #nonces: DecisionNonces;
  readonly #pairing: RateLimit;
  readonly #deciding: RateLimit;
  readonly #views = new Views();
  readonly #stale = new Map<string, string>();
  readonly #passkeys: PasskeyDesk;

  constructor(o: ApprovalPageOptions, scheme: 'http' | 'https') {
    this.#o = o;
    this.address = { bind: o.bind, port: o.port, scheme };
    this.#nonces = new DecisionNonces(o.clock, { ttlMs: 24 * 3600_000 });
    this.#pairing = new RateLimit(o.clock, { max: 10, windowMs: 60_000 });
    this.#deciding = new RateLimit(o.clock, { max: 60, windowMs: 60_000 });
    this.#passkeys = new PasskeyDesk(o.devices, o.clock, (data) => o.journal('passkey_added', data));
  }

  get runFingerprint(): string {
    return runFingerprint(this.#o.identity, this.run);
  }

  /** Marks cards gone stale and pings every open page when what it shows may have changed; returns the unsubscribe. */
  follow(bus: EventBus): () => void {
    return bus.subscribe((env) => {
      const e = env.event;
      if (e.type === 'approval.stale') this.#stale.set(e.id, e.reason);
      if (e.type === 'approval.resolved') this.#stale.delete(e.id);
      if (e.type === 'approval.added' || e.type === 'approval.resolved' || e.type === 'approval.stale' || e.type === 'activity' || e.type === 'daemon.locked') {
        for (const st of this.streams) st.res.write(`data: ${env.seq}\n\n`);
      }
    });
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const gate = judgePageRequest({ method: req.method ?? '', host: header(req, 'host'), origin: header(req, 'origin'), secFetchSite: header(req, 'sec-fetch-site'), contentType: header(req, 'content-type') }, this.address);
    if (gate.kind === 'refuse') return send(res, gate.status, { error: { code: gate.code, message: gate.message } });
    // A service worker's script is never served: none of the page's own exists, and one registered here would stand between the page and the daemon.
    if (header(req, 'service-worker') !== undefined) return send(res, 403, { error: { code: 'PAGE_REFUSED', message: 'the approval page serves no service worker' } });
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const asset = STATIC[path === '/index.html' ? '/' : path];
    if (gate.method === 'GET' && asset !== undefined) return this.#static(req, res, asset.file, asset.type);
    switch (`${gate.method} ${path}`) {
      case 'POST /api/hello':
        return send(res, 200, this.#hello(req, await readRaw(req)));
      case 'POST /api/pair':
        return this.#pair(req, res);
      case 'GET /api/state':
        return send(res, 200, this.#state(this.#at(req), (await this.#proven(req)).device));
      case 'GET /api/events':
        return this.#events(req, res, (await this.#proven(req)).device);
      case 'POST /api/decide':
        return send(res, 200, { decision: await this.#decide(this.#at(req), await this.#proven(req)) });
      case 'POST /api/passkey/options':
        return send(res, 200, { options: await this.#passkeys.options(this.#at(req), this.#limited(await this.#proven(req)).device) });
      case 'POST /api/passkey/register': {
        const p = this.#limited(await this.#proven(req));
        return send(res, 200, { passkey: await this.#passkeys.register(this.#at(req), p.device.id, parseJson(p.body)) });
      }
      case 'POST /api/revoke':
        return send(res, 200, { revoked: await this.#revoke(await this.#proven(req)) });
      default:
        send(res, 404, { error: { code: 'PAGE_REFUSED', message: 'nothing is served here' } });
    }
  }

  /** The page itself: a view token in it only when the browser navigated to it (a script cannot make such a request, nor read another window's answer). */
  #static(req: IncomingMessage, res: ServerResponse, file: string, type: string): void {
    let body = this.#files.get(file) ?? Buffer.alloc(0);
    if (file === 'index.html') {
      const navigated = header(req, 'sec-fetch-mode') === 'navigate' && header(req, 'sec-fetch-dest') === 'document';
      body = Buffer.from(body.toString('utf8').replace(VIEW_SLOT, `content="${navigated ? this.#views.issue() : ''}"`));
    }
    res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': String(body.length) });
    res.end(body);
  }

  /** The origin the browser addressed (the gate admitted only the page's own Host values). */
  #origin(req: IncomingMessage): string {
    return `${this.address.scheme}://${(header(req, 'host') ?? '').toLowerCase()}`;
  }

  #at(req: IncomingMessage): PageAt {
    return { host: (header(req, 'host') ?? '').toLowerCase(), origin: this.#origin(req) };
  }

  /** A device's request that counts against its minute's budget. */
  #limited(p: Proven): Proven {
    if (!this.#deciding.take(p.device.id)) throw new PosternError('PAGE_RATE_LIMITED', 'too many requests from this device in a minute');
    return p;
  }

  #hello(req: IncomingMessage, raw: Buffer): unknown {
    const r = HelloSchema.safeParse(parseJson(raw));
    if (!r.success) throw new PosternError('USAGE', 'the hello is not {challenge}');
    const { identity } = this.#o;
    return { page_key: identity.publicKey, run: this.run, signature: signHello(identity, r.data.challenge, this.#origin(req), this.run) };
  }

  /** The device that signed this request for this run, view and counter; or DEVICE_UNPAIRED / DEVICE_PROOF_INVALID. */
  async #proven(req: IncomingMessage): Promise<Proven> {
    const body = await readRaw(req);
    const live = this.#o.devices.live(header(req, DEVICE_HEADER));
    if (live === null) throw new PosternError('DEVICE_UNPAIRED', 'this browser is not a paired device (or it was revoked): pair it with `postern approvals pair`');
    const view = header(req, VIEW_HEADER) ?? '';
    if (!this.#views.has(view)) throw proofFailed('the request carries no page token this daemon run issued to an opening of the page');
    const m = /^([1-9][0-9]{0,15})\.([A-Za-z0-9_-]{86})$/.exec(header(req, PROOF_HEADER) ?? '');
    const counter = Number(m?.[1] ?? 0);
    const message = requestMessage({ origin: this.#origin(req), run: this.run, view, device: live.device.id, method: req.method ?? '', path: req.url ?? '', bodySha256: bodyDigest(body), counter });
    if (m === null || !verifies(live.key, message, m[2] ?? '')) throw proofFailed("the request's device signature does not verify for this daemon run");
    const taken = this.#views.take(view, live.device.id, counter);
    if (taken !== 'ok') throw proofFailed(taken === 'used' ? 'this request was already sent once (its counter is used)' : "the page's token belongs to another device");
    return { device: live.device, body };
  }

  #state(at: PageAt, d: PairedDevice): PageState {
    const o = this.#o;
    return {
      now: o.clock.now().toISOString(),
      device: { id: d.id, name: d.name },
      run_fingerprint: this.runFingerprint,
      presence: this.#passkeys.status(at, d.id),
      cards: o.queue.list().map((c) => {
        const nonce = this.#nonces.issue(d.id, c.id, c.call_digest);
        return pageCard(c, this.#stale.get(c.id), nonce, presenceChallenge(c.call_digest, this.run, nonce));
      }),
      activity: o.activity().slice(0, 20).map(pageActivity),
      devices: o.devices.list().map((x) => ({ id: x.id, name: x.name, paired_at: x.paired_at, revoked_at: x.revoked_at, passkeys: x.passkeys?.length ?? 0 })),
    };
  }

  async #decide(at: PageAt, p0: Proven): Promise<unknown> {
    const { queue } = this.#o;
    const d = p0.device;
    if (!this.#deciding.take(d.id)) throw new PosternError('PAGE_RATE_LIMITED', 'too many decisions from this device in a minute');
    const r = DecideSchema.safeParse(parseJson(p0.body));
    if (!r.success) throw new PosternError('USAGE', 'the decision is not {card_id, digest, nonce, verdict}');
    const p = r.data;
    const n = this.#nonces.take(p.nonce, d.id, p.card_id);
    if (n.kind === 'replayed') throw new PosternError('DECISION_REPLAYED', 'this decision was already sent once; nothing was decided again');
    if (n.kind === 'invalid') throw new PosternError('DECISION_NONCE_INVALID', n.why);
    const card = queue.get(p.card_id);
    if (card === undefined) throw approvalNotFound(p.card_id.slice(0, 64), queue.resolved.get(p.card_id));
    if (p.digest !== card.call_digest || n.digest !== card.call_digest) throw new PosternError('APPROVAL_MISMATCH', 'the decision was made on a different call; nothing was decided');
    const by = `device:${d.id}`;
    if (p.verdict === 'deny') return queue.decide(card.id, { verdict: 'deny', reason: p.reason ?? null }, by);
    const why = this.#stale.get(card.id);
    if (why !== undefined) throw new PosternError('DECISION_STALE', `the contract changed while the call waited: ${why.slice(0, 200)}`);
    const challenge = presenceChallenge(card.call_digest, this.run, p.nonce);
    const view = pageCard(card, undefined, p.nonce, challenge);
    const scope = p.scope ?? 'once';
    if (scope === 'session' && !view.approve.session && view.approve.when_seen?.session !== true) throw new PosternError('USAGE', view.approve.why ?? 'session approval is not offered for this card');
    // Presence is a rule of the page: an approval here of a tool that needs it carries a passkey's assertion over this card, run and nonce.
    const presence = card.presence === 'required' ? await this.#passkeys.approve(at, d.id, challenge, p.presence) : undefined;
    return queue.decide(card.id, { verdict: 'approve', scope, call_digest: p.digest, ...(p.seen === undefined ? {} : { seen: p.seen }) }, by, presence);
  }

  async #revoke(p: Proven): Promise<DeviceView> {
    this.#limited(p);
    const r = RevokeSchema.safeParse(parseJson(p.body));
    if (!r.success) throw new PosternError('USAGE', 'the revocation is not {id}');
    return this.#o.revoke(r.data.id);
  }

  /** A new device: a code `postern approvals pair` opened, the browser's public key and its signature over (code, origin, run, view, key). */
  async #pair(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { devices, journal, identity } = this.#o;
    if (!this.#pairing.take(req.socket.remoteAddress ?? '?')) throw new PosternError('PAGE_RATE_LIMITED', 'too many pairing attempts from this address in a minute');
    const r = PairSchema.safeParse(parseJson(await readRaw(req)));
    if (!r.success) throw new PosternError('USAGE', 'the pairing request is not {code, public_key, view, signature}');
    const p = r.data;
    if (!this.#views.has(p.view)) throw proofFailed('the pairing carries no page token this daemon run issued to an opening of the page');
    const key = devicePublicKey(p.public_key);
    if (key === null || !verifies(key, pairMessage(p.code, this.#origin(req), this.run, p.view, p.public_key), p.signature)) throw proofFailed('the pairing is not signed by the key it brings');
    const d = await devices.redeem(p.code, p.public_key);
    journal('device_paired', { device: d.id, name: d.name, sequence: devices.sequence });
    send(res, 200, { device: { id: d.id, name: d.name }, page_key: identity.publicKey, run: this.run });
  }

  #events(req: IncomingMessage, res: ServerResponse, d: PairedDevice): void {
    res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive' });
    res.write(': live\n\n');
    const st = { device: d.id, res };
    this.streams.add(st);
    req.once('close', () => this.streams.delete(st));
  }
}

export async function startApprovalPage(o: ApprovalPageOptions): Promise<ApprovalPageEndpoint> {
  const scheme = o.tls === null ? 'http' : 'https';
  const routes = new PageRoutes(o, scheme);
  const unsubscribe = routes.follow(o.bus);
  const sockets = new Set<Socket>();
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    routes.handle(req, res).catch((e: unknown) => fail(res, e));
  };
  const server: Server = o.tls === null ? createHttpServer(onRequest) : createHttpsServer({ key: o.tls.key, cert: o.tls.cert }, onRequest);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => reject(new PosternError('PAGE_LISTEN_FAILED', `the approval page cannot listen on ${o.bind}:${o.port} (${e.code ?? 'error'}): pick another port with \`postern approvals page enable --port N\``)));
      server.listen(o.port, o.bind, () => resolve());
    });
  } catch (e) {
    unsubscribe();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  routes.address = { bind: o.bind, port, scheme };
  const url = pageOrigins(routes.address)[0] ?? `${scheme}://${o.bind}:${port}`;
  return {
    url: `${url}/`,
    port,
    runFingerprint: routes.runFingerprint,
    dropDevice(id) {
      for (const st of routes.streams) {
        if (st.device !== id) continue;
        routes.streams.delete(st);
        st.res.end('data: revoked\n\n');
      }
    },
    async close() {
      unsubscribe();
      for (const st of routes.streams) st.res.end();
      routes.streams.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const sock of sockets) sock.destroy();
      await closed;
    },
  };
}
