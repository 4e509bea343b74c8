/**
 * A real PostgreSQL for tests (Debian's `postgresql` package): `initdb` and
 * `pg_ctl start` in a temp dir, listening on a Unix socket in that dir only
 * (`listen_addresses = ''`: no TCP at all), local `trust` authentication, an
 * `admin` superuser. It is stopped and removed at the end.
 *
 *   const skip = postgresSkip();          // string (reason) or false; throws if POSTERN_REQUIRE_POSTGRES=1
 *   describe('…', { skip }, () => {
 *     let pg: RealPostgres;
 *     before(async () => { pg = await startPostgres(); });
 *     after(() => pg.stop());
 *     it('…', async () => { … pg.url('ship', 'postern') … pg.cut() … pg.restore() … pg.kill() … });
 *   });
 *
 * initdb refuses to run as root: as root (CI) the server runs as the
 * `postgres` OS user the package creates (runuser), and the temp dir is given
 * to it; a test process running as root still reaches the socket. As anyone
 * else it runs as that user.
 *
 * Faults: `cut()` stops the server (fast shutdown: every connection is
 * closed, as by a network cut) and `restore()` starts it again on the same
 * socket; `kill()` sends SIGKILL to the postmaster and every backend (a crash:
 * the next start runs crash recovery). Cleanup also runs on process 'exit'.
 *
 * Linux only (/proc, runuser).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { waitFor } from './wait.js';

export const ADMIN_ROLE = 'admin';

export interface RealPostgres {
  /** The directory holding the socket (`host` for libpq and `pg`). */
  readonly socketDir: string;
  /** A connection string for `role` and `database` over the socket (no password: trust). */
  url(role?: string, database?: string): string;
  /** Runs SQL as the admin superuser (in `database`, default `postgres`). */
  admin(sql: string, database?: string): Promise<pg.QueryResult>;
  /** The server's log so far, for assertion messages. */
  log(): string;
  /** Whether the server is accepting connections now. */
  running(): boolean;
  /** Stops the server (fast shutdown): every client is cut off. */
  cut(): void;
  /** Starts a server stopped by cut() or kill() again, on the same socket. */
  restore(): void;
  /** SIGKILL to the postmaster and all its processes; waits until they are gone. */
  kill(): Promise<void>;
  /** Stops the server and removes the temp dir. */
  stop(): Promise<void>;
}

export type PostgresAvailability = { ok: true; bin: string } | { ok: false; why: string };

/** Where Debian's server binaries are (the newest version), or why the harness cannot run. */
export function postgresAvailable(): PostgresAvailability {
  if (process.platform !== 'linux') return { ok: false, why: `the PostgreSQL harness needs Linux (platform is ${process.platform})` };
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
  try {
    versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb')));
  } catch {
    // not installed
  }
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) return { ok: false, why: `${root}/*/bin/initdb is missing (install postgresql)` };
  if (isRoot() && spawnSync('id', ['-u', 'postgres'], { stdio: 'ignore' }).status !== 0) {
    return { ok: false, why: 'running as root, but there is no `postgres` OS user to run the server as (install postgresql)' };
  }
  return { ok: true, bin: join(root, newest, 'bin') };
}

/** For `describe(name, { skip: postgresSkip() }, …)`; with POSTERN_REQUIRE_POSTGRES=1 (CI) a missing server is an error. */
export function postgresSkip(): string | false {
  const a = postgresAvailable();
  if (a.ok) return false;
  if (process.env['POSTERN_REQUIRE_POSTGRES'] === '1') throw new Error(`POSTERN_REQUIRE_POSTGRES=1 but a real PostgreSQL cannot run: ${a.why}`);
  return a.why;
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

const live = new Set<() => void>();
let exitHook = false;

export async function startPostgres(): Promise<RealPostgres> {
  const avail = postgresAvailable();
  if (!avail.ok) throw new Error(avail.why);
  const bin = avail.bin;
  const dir = mkdtempSync(join(tmpdir(), 'postern-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  // As root the server's OS user must own the dir (and reach it: tmpdir is world-traversable).
  const asServer = (cmd: string, args: string[]): string[] => (isRoot() ? ['runuser', '-u', 'postgres', '--', cmd, ...args] : [cmd, ...args]);
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o755);
  const run = (cmd: string, args: string[]): void => {
    const [file, ...rest] = asServer(join(bin, cmd), args) as [string, ...string[]];
    const r = spawnSync(file, rest, { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status ?? r.signal}): ${r.stderr}${r.stdout}${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`);
  };
  const cleanup = (): void => {
    killAll(data);
    rmSync(dir, { recursive: true, force: true });
  };
  live.add(cleanup);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const c of live) c();
    });
  }
  try {
    run('initdb', ['-D', data, '-U', ADMIN_ROLE, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const opts = `-k ${dir} -c listen_addresses='' -c fsync=off -c max_connections=50 -c unix_socket_permissions=0777`;
    const start = (): void => run('pg_ctl', ['-D', data, '-l', logFile, '-o', opts, '-w', '-t', '60', 'start']);
    start();
    const url = (role = ADMIN_ROLE, database = 'postgres'): string => `postgresql://${encodeURIComponent(role)}@/${encodeURIComponent(database)}?host=${encodeURIComponent(dir)}`;
    let up = true;
    const h: RealPostgres = {
      socketDir: dir,
      url,
      async admin(sql, database = 'postgres') {
        const c = new pg.Client({ connectionString: url(ADMIN_ROLE, database) });
        await c.connect();
        try {
          return await c.query(sql);
        } finally {
          await c.end();
        }
      },
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      running: () => up,
      cut() {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
        up = false;
      },
      restore() {
        start();
        up = true;
      },
      async kill() {
        const pids = killAll(data);
        up = false;
        await waitFor(() => pids.every((p) => !alive(p)), 'the killed PostgreSQL processes to end');
        // A killed postmaster may stay a zombie (a container's pid 1 may never reap it), and the
        // next start would take its pid for a live server: the lock file goes, as after a reboot.
        rmSync(join(data, 'postmaster.pid'), { force: true });
        rmSync(join(dir, '.s.PGSQL.5432.lock'), { force: true });
      },
      async stop() {
        if (up) {
          try {
            run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
          } catch {
            // killed below
          }
        }
        up = false;
        live.delete(cleanup);
        cleanup();
        await Promise.resolve();
      },
    };
    await h.admin('SELECT 1');
    return h;
  } catch (e) {
    live.delete(cleanup);
    cleanup();
    throw e;
  }
}

/** The postmaster (from postmaster.pid) and its children, sent SIGKILL; returns their pids. */
function killAll(data: string): number[] {
  let master: number;
  try {
    master = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return [];
  }
  if (!Number.isSafeInteger(master) || master <= 1 || !alive(master)) return [];
  const pids = [master, ...childrenOf(master)];
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids;
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = text.slice(text.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
