/**
 * One fixture builder for the set-up most e2e files repeat: a fake HTTP
 * target, an installation holding its bearer token, a catalog accepted with
 * the target `local` on that origin, and the daemon started. A file names its
 * tools (or takes a named preset from TOOLS) and gets the target and the
 * installation back; `close` ends both.
 */
import { startFakeHttp, type FakeHttpOptions, type FakeHttpServer } from './fake-http.js';
import { install, type Installation } from './daemon.js';

/** The target every preset calls: the fake HTTP server, with the `api-token` bearer credential. */
export const localTarget = (origin: string): Record<string, unknown> => ({ http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } });

/** Named tools the files share. */
export const TOOLS = {
  /** A read tool without approval: GET /json. */
  getJson: { get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'GET', path: '/json' } }] } },
} as const;

export interface HttpFixtureOptions {
  /** The `api-token` bearer token. */
  readonly token: string;
  /** More secrets, after `api-token`. */
  readonly secrets?: readonly { name: string; kind: string; value: string; flags?: string[] }[];
  readonly config?: Record<string, unknown>;
  /** The catalog's tools, calling target `local`. */
  readonly tools: Record<string, unknown>;
  readonly http?: FakeHttpOptions;
  /** Start the daemon (default true). */
  readonly start?: boolean;
}

export interface HttpFixture {
  readonly http: FakeHttpServer;
  readonly inst: Installation;
  /** Stops the daemon, removes the home, closes the target. */
  close(): Promise<void>;
}

export async function httpFixture(o: HttpFixtureOptions): Promise<HttpFixture> {
  const http = await startFakeHttp(o.http);
  const inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: o.token }, ...(o.secrets ?? [])], ...(o.config === undefined ? {} : { config: o.config }) });
  await inst.acceptCatalog({ targets: { local: localTarget(http.origin) }, tools: o.tools });
  if (o.start !== false) await inst.startDaemon();
  return {
    http,
    inst,
    async close() {
      await inst.cleanup();
      await http.close();
    },
  };
}
