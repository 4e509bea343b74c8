/**
 * The demo's world: a temporary home (0700) with a demo vault under a random
 * passphrase (printed — this vault is thrown away), a canary-like bearer
 * token and an SSH key in it, the in-process HTTP and SSH targets with their
 * request log, the demo catalog accepted through the same `acceptCatalog`
 * (src/home) that `postern catalog accept` runs, and the real daemon
 * (`startDaemon`, in this process).
 *
 * Cost: the vault is made under the test key-derivation profile
 * (vault/kdf-profile.ts: Argon2id at 1 pass, 1 MiB), chosen here in code for
 * this home only, because the vault is thrown away and its passphrase is
 * printed; the production cost would spend five seconds of set-up on five
 * derivations (create, add the secrets, accept #1, start the daemon, accept
 * #2). The demo says so on its vault line.
 *
 * Invariants: secret values live only in the vault, in the targets that check
 * them, and in `canaries` (kept to prove they were never printed); everything
 * started is registered in `stops` so one `close()` stops it all, in reverse
 * order, and removes the home unless asked to keep it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Clock } from '../clock/index.js';
import { catalogDigest } from '../contracts/index.js';
import { acceptCatalog, type AcceptContext } from '../home/catalog-accept.js';
import { homePaths, type HomePaths } from '../home/paths.js';
import { ensurePrivateHome } from '../home/permissions.js';
import { PosternError } from '../rules/errors.js';
import type { RedactableCredential } from '../redaction/index.js';
import { createVault, TEST_KDF_PROFILE, vaultOptionsFor, withVaultWriter } from '../vault/index.js';
import { startDaemon, type DaemonHandle } from '../daemon/run.js';
import { DEMO_CREDENTIALS, demoCatalogText, type DemoAcceptance, type DemoTargets } from './catalog.js';
import { startHttpService } from './http-service.js';
import { demoKeyPair, startSshService } from './ssh-service.js';
import { RequestLog } from './request-log.js';

export const SSH_USER = 'deploy';

/** The demo's throwaway vault is made, and opened, at the test profile's cheap cost. */
export const DEMO_KDF = TEST_KDF_PROFILE;

export interface DemoWorld {
  readonly paths: HomePaths;
  readonly passphrase: string;
  readonly targets: DemoTargets;
  readonly log: RequestLog;
  readonly requestLogFile: string;
  /** The demo credentials as the vault holds them, only to prove they never appear anywhere. */
  readonly canaries: readonly RedactableCredential[];
  /** The key the operator channel is authenticated with (derived from the vault). */
  readonly operatorKey: Uint8Array;
  readonly daemonLog: readonly string[];
  /** Writes catalog.yaml for acceptance `n` and accepts exactly those bytes; returns the gate's changes. */
  accept(n: DemoAcceptance): Promise<GateChange[]>;
  startDaemon(): Promise<DaemonHandle>;
  /** Registers something to stop at close (run in reverse order). */
  onClose(stop: () => Promise<void> | void): void;
  /** Stops everything and removes the home (unless `keep`); later calls return the first one's promise. */
  close(opts: { keep: boolean }): Promise<void>;
}

const GateChangeSchema = z.object({ tool: z.string(), from: z.number().nullable(), to: z.number().nullable(), class: z.string(), policy: z.string().nullable() });
const GateJsonSchema = z.object({ changes: z.array(GateChangeSchema) });
export type GateChange = z.infer<typeof GateChangeSchema>;

export async function buildWorld(clock: Clock): Promise<DemoWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'postern-demo-'));
  // Last resort: whatever happens, the process does not leave the demo home behind.
  let removed = false;
  const removeSync = (): void => {
    if (!removed) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', removeSync);
  const stops: (() => Promise<void> | void)[] = [];
  let closing: Promise<void> | undefined;
  const close = ({ keep }: { keep: boolean }): Promise<void> =>
    (closing ??= (async () => {
      for (const stop of stops.splice(0).reverse()) await Promise.resolve(stop()).catch(() => undefined);
      if (!keep) await rm(dir, { recursive: true, force: true });
      removed = true;
      process.removeListener('exit', removeSync);
    })());
  // Something started after close() began (an interrupted start-up) is stopped at once.
  const register = (stop: () => Promise<void> | void): void => {
    if (closing === undefined) stops.push(stop);
    else void Promise.resolve(stop()).catch(() => undefined);
  };
  try {
    return await populate(dir, clock, register, close);
  } catch (e) {
    await close({ keep: false });
    throw e;
  }
}

async function populate(dir: string, clock: Clock, register: (stop: () => Promise<void> | void) => void, close: DemoWorld['close']): Promise<DemoWorld> {
  const paths = homePaths(dir);
  await ensurePrivateHome(paths.home);
  const passphrase = `demo-${randomBytes(12).toString('base64url')}`;
  const token = `postern-demo-canary-${randomBytes(16).toString('hex')}`;
  const clientKey = demoKeyPair();
  const hostKey = demoKeyPair();
  const pass = (): Uint8Array => new TextEncoder().encode(passphrase);

  const vault = vaultOptionsFor(DEMO_KDF, clock);
  await createVault(paths.vault, pass(), vault);
  const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
  const canaries: RedactableCredential[] = [
    { meta: { name: DEMO_CREDENTIALS.http, kind: 'http_bearer', fields: {} }, secret: { token: utf8(token) } },
    { meta: { name: DEMO_CREDENTIALS.ssh, kind: 'ssh_key', fields: { key_type: clientKey.keyType, public_fingerprint: clientKey.fingerprint } }, secret: { private_key: utf8(clientKey.privatePem) } },
  ];
  const operatorKey = await withVaultWriter(paths.vault, pass(), (v) => {
    for (const c of canaries) v.add({ name: c.meta.name, kind: c.meta.kind, fields: { ...c.meta.fields }, secret: { ...c.secret } });
    return Uint8Array.from(v.deriveKey('operator-auth'));
  }, vault);
  register(() => void operatorKey.fill(0));

  const requestLogFile = join(dir, 'requests.jsonl');
  const log = new RequestLog(requestLogFile);
  const http = await startHttpService(log, new TextEncoder().encode(token));
  register(() => http.close());
  const ssh = await startSshService(log, hostKey, clientKey.publicLine, SSH_USER);
  register(() => ssh.close());
  const targets: DemoTargets = { httpOrigin: http.origin, sshPort: ssh.port, sshUser: SSH_USER, hostKey: hostKey.fingerprint };

  const daemonLog: string[] = [];
  const accepted: string[] = [];
  // Nobody is asked: the demo accepts with --digest, the bytes it wrote itself.
  const ctx: AcceptContext = {
    paths,
    clock,
    vault,
    unlockPassphrase: () => Promise.resolve(pass()),
    out: (line) => void accepted.push(line),
  };

  return {
    paths,
    passphrase,
    targets,
    log,
    requestLogFile,
    canaries,
    operatorKey,
    daemonLog,
    async accept(n) {
      const text = demoCatalogText(targets, n);
      await writeFile(paths.catalog, text, { mode: 0o600 });
      accepted.length = 0;
      // --digest: the demo wrote these exact bytes (a first catalog cannot be accepted with --yes alone).
      const outcome = await acceptCatalog(ctx, { digest: catalogDigest(text), json: true });
      if (outcome.kind !== 'accepted') throw new PosternError('DEMO_FAILED', `catalog #${n} was not accepted (${outcome.kind})`);
      const json = accepted.find((l) => l.startsWith('{'));
      const report = GateJsonSchema.safeParse(json === undefined ? undefined : JSON.parse(json));
      return report.success ? report.data.changes : [];
    },
    async startDaemon() {
      const handle = await startDaemon(paths, pass(), { clock, kdf: DEMO_KDF, log: (line) => void daemonLog.push(line) });
      register(() => handle.close('demo finished'));
      return handle;
    },
    onClose: register,
    close,
  };
}
