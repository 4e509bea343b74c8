/**
 * One fixture builder for the set-up most e2e files repeat: a fake HTTP
 * target, an installation holding its bearer token, a catalog accepted with
 * the target `local` on that origin, and the daemon started. A file names its
 * tools (or takes a named preset from TOOLS, or builds its whole catalog from
 * the targets) and gets the target and the installation back; `close` ends both.
 *
 *   const TOKEN = canary('notes');
 *   const fx = await httpFixture({ token: TOKEN, tools: TOOLS.getJson });
 *   const agent = await fx.inst.client();
 *
 * The home comes from one built once for the same secrets (`install({ shared: true })`,
 * test/helpers/shared-home.ts) when every secret is the same on each run, as a
 * `canary(label)` is; a secret made with randomBytes gets a home of its own.
 */
import { createHash } from 'node:crypto';
import { startFakeHttp, type FakeHttpOptions, type FakeHttpServer, type RouteHandler } from './fake-http.js';
import { install, type Installation } from './daemon.js';

/** The target every preset calls: the fake HTTP server, with the `api-token` bearer credential (and any more fields, e.g. `idempotency_header`). */
export const localTarget = (origin: string, extra: Record<string, unknown> = {}, credential = 'api-token'): Record<string, unknown> => ({ http: { origin, credential, auth: 'bearer', allow_private: true, ...extra } });

/**
 * A canary secret: `CANARY-<label>-<24 hex>`, the same on every run (so a home holding it can be
 * built once and copied), distinct for each label. Tests search every output for it.
 */
export const canary = (label: string): string => `CANARY-${label}-${createHash('sha256').update(`postern e2e canary ${label}`).digest('hex').slice(0, 24)}`;

/** The input of `writeTool`: a title. */
export const NOTE = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] } as const;

/** A write without approval on target `local`: POST `path` with `{ title }`. */
export const writeTool = (path: string, description = `A write to ${path}.`): Record<string, unknown> => ({
  description,
  effect: 'write',
  approval: 'none',
  revisions: [{ revision: 1, input: NOTE, http: { target: 'local', method: 'POST', path, body: { title: '{title}' } } }],
});

/** Named tools the files share. */
export const TOOLS = {
  /** A read tool without approval: GET /json. */
  getJson: { get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'GET', path: '/json' } }] } },
  /** A write the operator approves, each call: POST /echo with `{ title }`. */
  gatedWrite: { gated_write: { ...writeTool('/echo', 'A write that needs a per-call approval.'), approval: 'per-call' } },
} as const;

export type Secret = { name: string; kind: string; value: string; flags?: string[] };

export interface HttpFixtureOptions {
  /** The bearer token, held by the secret `credential`. */
  readonly token: string;
  /** The name of the bearer secret and the credential of target `local` (default `api-token`). */
  readonly credential?: string;
  /** More secrets, after the bearer one. */
  readonly secrets?: readonly Secret[];
  readonly config?: Record<string, unknown>;
  /** More fields of the target `local` (e.g. `{ idempotency_header: true }`). */
  readonly target?: Record<string, unknown>;
  /** The catalog's tools, calling target `local`. */
  readonly tools?: Record<string, unknown>;
  /** The whole catalog instead of `tools`, given the targets (`{ local }`) and the fake server. */
  readonly catalog?: (targets: Record<string, Record<string, unknown>>, http: FakeHttpServer) => unknown;
  /** Routes of the fake server, added before anything is installed. */
  readonly routes?: Record<string, RouteHandler>;
  readonly http?: FakeHttpOptions;
  /** Build the home once and copy it (default: when every secret is a `canary(label)`). */
  readonly shared?: boolean;
  /** Start the daemon (default true); an array starts it with those arguments (e.g. `['--unattended']`). */
  readonly start?: boolean | readonly string[];
}

export interface HttpFixture {
  readonly http: FakeHttpServer;
  readonly inst: Installation;
  /** The targets the catalog was given: `{ local }`. */
  readonly targets: Record<string, Record<string, unknown>>;
  /** Stops the daemon, removes the home, closes the target. */
  close(): Promise<void>;
}

export async function httpFixture(o: HttpFixtureOptions): Promise<HttpFixture> {
  if ((o.tools === undefined) === (o.catalog === undefined)) throw new Error('httpFixture: give tools or catalog, one of them');
  const http = await startFakeHttp(o.http);
  for (const [path, handler] of Object.entries(o.routes ?? {})) http.route(path, handler);
  const credential = o.credential ?? 'api-token';
  const secrets = [{ name: credential, kind: 'http_bearer', value: o.token }, ...(o.secrets ?? [])];
  const inst = await install({ secrets, shared: o.shared ?? secrets.every((s) => s.value === canaryOf(s.value)), ...(o.config === undefined ? {} : { config: o.config }) });
  const targets = { local: localTarget(http.origin, o.target, credential) };
  await inst.acceptCatalog(o.catalog === undefined ? { targets, tools: o.tools } : o.catalog(targets, http));
  if (o.start !== false) await inst.startDaemon(Array.isArray(o.start) ? o.start : []);
  return {
    http,
    inst,
    targets,
    async close() {
      await inst.cleanup();
      await http.close();
    },
  };
}

/** `value` when it is a `canary(label)` (the same on every run), else undefined. */
function canaryOf(value: string): string | undefined {
  const m = /^CANARY-(.+)-[0-9a-f]{24}$/.exec(value);
  return m !== null && canary(m[1]!) === value ? value : undefined;
}
