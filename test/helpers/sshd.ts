/**
 * A real OpenSSH `sshd` on 127.0.0.1 for tests: its own host key, one client
 * key in its authorized_keys, public-key login as the current OS user, no
 * password, no PAM, no forwarding, no PTY. Everything lives in a temp dir.
 *
 *   const skip = sshdSkip();             // string (reason) or false; throws if POSTERN_REQUIRE_SSHD=1
 *   describe('…', { skip }, () => {
 *     let srv: RealSshd;
 *     before(async () => { srv = await startSshd(); });
 *     after(() => srv.stop());
 *     it('…', async () => { … srv.port, srv.hostKeyFingerprint, srv.clientKey.private … });
 *   });
 *
 * Finding every process to kill: sshd puts each connection (setsid in the
 * accept loop) and each session command (setsid before exec) in a new session
 * and process group, so killing sshd's group is not enough, and once sshd is
 * gone a still-running command is reparented away from it. Two handles cover
 * both cases, read from /proc:
 *   - descent: every process whose parent chain leads to the listening sshd
 *     (connection monitors, the per-user children, shells, their commands);
 *   - a marker: sshd_config's `SetEnv POSTERN_TEST_SSHD=<temp dir>` puts the
 *     temp dir into every session's environment, inherited by everything the
 *     remote command starts, so a command that outlived its sshd is still found
 *     (the remote side can read the same path as $POSTERN_TEST_SSHD).
 * kill() first stops (SIGSTOP) what it finds and scans again until nothing new
 * appears, so a process forked during the scan is not missed; then it sends
 * the signal and SIGCONT. Cleanup runs in stop(), on process 'exit' and, for a
 * test process that dies by a signal, in a detached guard shell that waits for
 * the test process's end of a pipe to close.
 *
 * The session environment gets SHLVL=1 so that bash does not source
 * ~/.bashrc before each command (see sshdConfig); `extraConfig:
 * ['SetEnv SHLVL=0']` brings that back.
 *
 * Worth knowing when writing tests: logged in as root, OpenSSH runs the
 * session in its privileged monitor (no unprivileged child) and refuses
 * channel signals ("session signalling requires privilege separation"), and a
 * no-PTY command is not killed when its connection closes, so a command that
 * the client gave up on keeps running until stop()/killSessions().
 *
 * Linux only (/proc); sshdAvailable() says why it cannot run elsewhere.
 */
import { AssertionError } from 'node:assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { sshFingerprint } from '../../src/executors/ssh/index.js';
import { waitFor } from './wait.js';

export const SSHD_PATH = '/usr/sbin/sshd';
/** The environment variable sshd sets in every session (value: the harness's temp dir). */
export const SSHD_MARK_VAR = 'POSTERN_TEST_SSHD';

const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 3_000;
const PORT_ATTEMPTS = 5;
const MAX_LOG_CHARS = 1024 * 1024;

export interface RealSshd {
  readonly port: number;
  readonly host: '127.0.0.1';
  /** The OS user the tests log in as (os.userInfo().username). */
  readonly user: string;
  /** `SHA256:…` of the host key, as `ssh-keygen -l` shows it. */
  readonly hostKeyFingerprint: string;
  /** An ed25519 key (OpenSSH format) in authorized_keys. */
  readonly clientKey: { readonly private: string; readonly public: string };
  /** The harness's temp dir, for files a remote command should touch; removed by stop(). */
  readonly dir: string;
  /** sshd's stderr so far (LogLevel VERBOSE), for assertion messages. */
  log(): string;
  /** Live processes started by this sshd's sessions (found by the environment marker). */
  sessionPids(): number[];
  /** Sends `signal` (default SIGKILL) to those session processes only; sshd keeps running. */
  killSessions(signal?: NodeJS.Signals): void;
  /**
   * Sends `signal` (default SIGKILL) to sshd, its connection processes and
   * every session process: "sshd died mid-command" for the client. (A real
   * sshd crash would leave the commands running; this leaves nothing.) Synchronous.
   */
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after a grace period for whatever is left; removes the temp dir. */
  stop(): Promise<void>;
}

export type SshdAvailability = { ok: true } | { ok: false; why: string };

/** Whether startSshd() can work here, and why not. */
export function sshdAvailable(): SshdAvailability {
  if (process.platform !== 'linux') return { ok: false, why: `the sshd harness needs Linux /proc (platform is ${process.platform})` };
  try {
    accessSync(SSHD_PATH, constants.X_OK);
  } catch {
    return { ok: false, why: `${SSHD_PATH} is missing (install openssh-server)` };
  }
  if (spawnSync('ssh-keygen', ['-?'], { stdio: 'ignore' }).error !== undefined) {
    return { ok: false, why: 'ssh-keygen is not on PATH (install openssh-client)' };
  }
  const locked = lockedAccount(userInfo().username);
  if (locked !== null) return { ok: false, why: locked };
  return { ok: true };
}

/**
 * For `describe(name, { skip: sshdSkip() }, …)`: false when sshd can run, the
 * reason when it cannot. With POSTERN_REQUIRE_SSHD=1 (CI) a missing sshd is
 * an error instead of a skip.
 */
export function sshdSkip(): string | false {
  const a = sshdAvailable();
  if (a.ok) return false;
  if (process.env['POSTERN_REQUIRE_SSHD'] === '1') throw new Error(`POSTERN_REQUIRE_SSHD=1 but a real sshd cannot run: ${a.why}`);
  return a.why;
}

/** A fresh ed25519 key pair from ssh-keygen, with its `SHA256:` fingerprint. */
export function newEd25519Key(comment = 'postern-test'): { private: string; public: string; fingerprint: string } {
  const dir = mkdtempSync(join(tmpdir(), 'postern-key-'));
  try {
    const file = join(dir, 'k');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file], { stdio: 'ignore' });
    const pub = readFileSync(`${file}.pub`, 'utf8').trim();
    return { private: readFileSync(file, 'utf8'), public: pub, fingerprint: sshFingerprint(publicBlob(pub)) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Starts `sshd -D -e -f <dir>/sshd_config` in its own process group on a free
 * loopback port and waits until it answers with an `SSH-2.0-` banner.
 * `maxSessions` sets MaxSessions (default 10). `extraConfig` lines come first
 * in sshd_config, so they override the defaults (sshd keeps the first value of
 * a keyword); from a `Match` line on they go to the end.
 */
export async function startSshd(opts: { maxSessions?: number; extraConfig?: string[] } = {}): Promise<RealSshd> {
  const avail = sshdAvailable();
  if (!avail.ok) throw new Error(avail.why);
  const user = userInfo().username;
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'postern-sshd-'));
  try {
    const hostKey = join(dir, 'host_ed25519');
    const clientKey = join(dir, 'client_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'postern-test-host', '-f', hostKey], { stdio: 'ignore' });
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'postern-test-client', '-f', clientKey], { stdio: 'ignore' });
    const client = { private: readFileSync(clientKey, 'utf8'), public: readFileSync(`${clientKey}.pub`, 'utf8').trim() };
    writeFileSync(join(dir, 'authorized_keys'), `${client.public}\n`, { mode: 0o600 });
    const hostKeyFingerprint = checkedFingerprint(`${hostKey}.pub`);
    // As root, OpenSSH needs its privilege-separation directory (created by the package's service normally).
    if (root && !existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755, recursive: true });

    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const config = join(dir, 'sshd_config');
      writeFileSync(config, sshdConfig({ dir, port, user, root, maxSessions: opts.maxSessions ?? 10, extra: opts.extraConfig ?? [] }), { mode: 0o600 });
      const started = await launch(config, port);
      if ('retry' in started) {
        if (attempt < PORT_ATTEMPTS) continue;
        throw new Error(`sshd could not bind a free port after ${PORT_ATTEMPTS} attempts:\n${started.log}`);
      }
      return harness({ dir, port, user, hostKeyFingerprint, clientKey: client, ...started });
    }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

// ---------------------------------------------------------------------------

function sshdConfig(c: { dir: string; port: number; user: string; root: boolean; maxSessions: number; extra: readonly string[] }): string {
  const q = (s: string): string => `"${s}"`;
  const matchAt = c.extra.findIndex((l) => /^\s*match\s/i.test(l));
  const tail = matchAt === -1 ? [] : c.extra.slice(matchAt);
  // sshd honours only the first SetEnv line, and there the first value of a name: extra SetEnv
  // values go first on the harness's line.
  const setEnv = /^\s*setenv\s+/i;
  const head = (matchAt === -1 ? c.extra : c.extra.slice(0, matchAt)).filter((l) => !setEnv.test(l));
  const extraEnv = c.extra.slice(0, matchAt === -1 ? undefined : matchAt).filter((l) => setEnv.test(l)).map((l) => l.replace(setEnv, ''));
  const lines = [
    ...head,
    `Port ${c.port}`,
    'ListenAddress 127.0.0.1',
    'AddressFamily inet',
    `HostKey ${q(join(c.dir, 'host_ed25519'))}`,
    `PidFile ${q(join(c.dir, 'sshd.pid'))}`,
    `AuthorizedKeysFile ${q(join(c.dir, 'authorized_keys'))}`,
    `AllowUsers ${c.user}`,
    ...(c.root ? ['PermitRootLogin prohibit-password'] : []),
    'StrictModes no',
    'PubkeyAuthentication yes',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'HostbasedAuthentication no',
    'UsePAM no',
    'AllowTcpForwarding no',
    'AllowStreamLocalForwarding no',
    'AllowAgentForwarding no',
    'X11Forwarding no',
    'PermitTunnel no',
    'PermitTTY no',
    'PermitUserEnvironment no',
    'PrintMotd no',
    'PrintLastLog no',
    'UseDNS no',
    `MaxSessions ${c.maxSessions}`,
    // Tests may open many connections at once; the default 10:30:100 drops some at random.
    'MaxStartups 100',
    'LoginGraceTime 30',
    ...(sshdVersion() >= 9.8 ? ['PerSourcePenalties no'] : []), // 9.8+ would throttle 127.0.0.1 after failed logins
    // SHLVL=1: bash, started by sshd as a top-level shell, would source ~/.bashrc before every
    // command (Debian builds bash with SSH_SOURCE_BASHRC); a developer's rc file can print or
    // take a second. With SHLVL set the login shell runs the command line without it.
    ['SetEnv', ...extraEnv, q(`${SSHD_MARK_VAR}=${c.dir}`), 'SHLVL=1'].join(' '),
    'LogLevel VERBOSE',
    ...tail,
  ];
  return `${lines.join('\n')}\n`;
}

let cachedVersion: number | undefined;
function sshdVersion(): number {
  if (cachedVersion === undefined) {
    const out = spawnSync(SSHD_PATH, ['-V'], { encoding: 'utf8' });
    const m = /OpenSSH_(\d+)\.(\d+)/.exec(`${out.stderr}${out.stdout}`);
    cachedVersion = m === null ? 0 : Number(`${m[1]}.${m[2]}`);
  }
  return cachedVersion;
}

interface Started {
  readonly child: ChildProcess;
  readonly logs: { text: string };
}

/** Runs sshd and waits for "Server listening" and a banner; `retry` when the port was taken meanwhile. */
async function launch(config: string, port: number): Promise<Started | { retry: true; log: string }> {
  const child = spawn(SSHD_PATH, ['-D', '-e', '-f', config], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  const logs = { text: '' };
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (s: string) => {
    logs.text = (logs.text + s).slice(-MAX_LOG_CHARS);
  });
  child.on('error', (e) => {
    logs.text += `\n[spawn error: ${e.message}]`;
  });
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  const listening = `Server listening on 127.0.0.1 port ${port}.`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  await within(() => logs.text.includes(listening) || exited(), 'sshd to log that it listens', START_TIMEOUT_MS);
  if (exited() || !logs.text.includes(listening)) {
    if (!exited()) killGroup(child, 'SIGKILL');
    await within(exited, 'the killed sshd to exit', 2000);
    if (/Address already in use/.test(logs.text)) return { retry: true, log: logs.text };
    throw new Error(`sshd did not start listening on 127.0.0.1:${port} (${exited() ? `exited ${child.exitCode ?? child.signalCode}` : 'timed out'}):\n${logs.text}`);
  }
  const banner = await readBanner(port, Math.max(1000, deadline - Date.now()));
  if (!banner.startsWith('SSH-2.0-')) {
    killGroup(child, 'SIGKILL');
    throw new Error(`127.0.0.1:${port} did not answer with an SSH-2.0 banner (got ${JSON.stringify(banner)}):\n${logs.text}`);
  }
  // A test file that forgets stop() must still end; the exit hook and the guard clean up.
  child.unref();
  (child.stderr as Socket | null)?.unref();
  return { child, logs };
}

const live = new Set<() => void>();
let exitHookInstalled = false;

function harness(h: Started & { dir: string; port: number; user: string; hostKeyFingerprint: string; clientKey: { private: string; public: string } }): RealSshd {
  const pid = h.child.pid!;
  const mark = `${SSHD_MARK_VAR}=${h.dir}`;
  const guard = startGuard(pid, mark, h.dir);
  let stopped = false;
  const gone = (): boolean => h.child.exitCode !== null || h.child.signalCode !== null;

  const sweep = (): void => {
    signalTree(pid, gone() ? null : pid, mark, 'SIGKILL');
    guard.kill('SIGKILL');
    rmSync(h.dir, { recursive: true, force: true });
  };
  live.add(sweep);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const s of live) s();
    });
  }

  return {
    port: h.port,
    host: '127.0.0.1',
    user: h.user,
    hostKeyFingerprint: h.hostKeyFingerprint,
    clientKey: h.clientKey,
    dir: h.dir,
    log: () => h.logs.text,
    sessionPids: () => markedPids(mark),
    killSessions(sig: NodeJS.Signals = 'SIGKILL') {
      for (const p of markedPids(mark)) signal(p, sig);
    },
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      signalTree(pid, gone() ? null : pid, mark, signal);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      const hit = signalTree(pid, gone() ? null : pid, mark, 'SIGTERM');
      await within(() => gone() && [...hit].every((p) => !alive(p)), 'sshd and its sessions to end on SIGTERM', STOP_GRACE_MS);
      for (const p of hit) if (alive(p)) signal(p, 'SIGKILL');
      await within(gone, 'sshd to end', STOP_GRACE_MS);
      live.delete(sweep);
      sweep();
    },
  };
}

/**
 * A detached shell that outlives a test process killed by a signal: when the
 * pipe from this process closes it kills sshd's group and every marked
 * session process, and removes the temp dir. stop() kills it first.
 */
function startGuard(pgid: number, mark: string, dir: string): ChildProcess {
  const script = [
    'read -r _ || :',
    'kill -KILL "-$1" 2>/dev/null',
    'for e in /proc/[0-9]*/environ; do',
    '  if tr "\\0" "\\n" < "$e" 2>/dev/null | grep -qxF -- "$2"; then p=${e%/environ}; kill -KILL "${p#/proc/}" 2>/dev/null; fi',
    'done',
    'rm -rf -- "$3"',
  ].join('\n');
  const guard = spawn('/bin/sh', ['-c', script, 'postern-sshd-guard', String(pgid), mark, dir], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  guard.unref();
  (guard.stdin as Socket | null)?.unref();
  return guard;
}

// ---------------------------------------------------------------------------
// /proc

interface Proc {
  readonly pid: number;
  readonly ppid: number;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = stat(Number(name));
    if (st !== null && st.state !== 'Z' && st.state !== 'X') out.push({ pid: Number(name), ppid: st.ppid });
  }
  return out;
}

function stat(pid: number): { state: string; ppid: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may contain spaces and parentheses.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '?', ppid: Number(fields[1]) };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  const st = stat(pid);
  return st !== null && st.state !== 'Z' && st.state !== 'X';
}

function hasMark(pid: number, mark: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(mark);
  } catch {
    return false;
  }
}

function markedPids(mark: string): number[] {
  return processes()
    .map((p) => p.pid)
    .filter((p) => p !== process.pid && hasMark(p, mark));
}

/** The root's descendants (with the root) plus every marked process. */
function tree(root: number | null, mark: string): Set<number> {
  const procs = processes();
  const found = new Set<number>(root !== null && alive(root) ? [root] : []);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  for (const p of procs) if (hasMark(p.pid, mark)) found.add(p.pid);
  found.delete(process.pid);
  return found;
}

/** Freezes the tree until a scan finds nothing new, then signals and resumes it; returns the pids. */
function signalTree(pgid: number, root: number | null, mark: string, sig: NodeJS.Signals): Set<number> {
  if (root !== null) signal(-pgid, 'SIGSTOP');
  const hit = new Set<number>();
  for (let round = 0; round < 50; round++) {
    const fresh = [...tree(root, mark)].filter((p) => !hit.has(p));
    if (fresh.length === 0) break;
    for (const p of fresh) {
      signal(p, 'SIGSTOP');
      hit.add(p);
    }
  }
  for (const p of hit) signal(p, sig);
  for (const p of hit) signal(p, 'SIGCONT');
  if (root !== null) signal(-pgid, 'SIGCONT');
  return hit;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function killGroup(child: ChildProcess, sig: NodeJS.Signals): void {
  if (child.pid !== undefined) signal(-child.pid, sig);
}

// ---------------------------------------------------------------------------
// small things

function checkedFingerprint(pubFile: string): string {
  const line = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubFile], { encoding: 'utf8' });
  const fromKeygen = line.split(' ')[1] ?? '';
  const fromBlob = sshFingerprint(publicBlob(readFileSync(pubFile, 'utf8')));
  if (fromKeygen !== fromBlob) throw new Error(`host key fingerprint: ssh-keygen says ${fromKeygen}, the key blob gives ${fromBlob}`);
  return fromKeygen;
}

function publicBlob(publicLine: string): Buffer {
  return Buffer.from(publicLine.trim().split(/\s+/)[1] ?? '', 'base64');
}

/** sshd without PAM refuses an account whose password field starts with "!" (locked). */
function lockedAccount(user: string): string | null {
  let shadow: string;
  try {
    shadow = readFileSync('/etc/shadow', 'utf8');
  } catch {
    return null; // not readable (not root): sshd can only log in as this user anyway
  }
  const entry = shadow.split('\n').find((l) => l.startsWith(`${user}:`));
  const pw = entry?.split(':')[1] ?? '';
  return pw.startsWith('!') ? `the account ${user} is locked in /etc/shadow ("!"); sshd with UsePAM no refuses it (use "*" for a key-only account)` : null;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** The first line the server sends, or what came before the connection ended / the time ran out. */
async function readBanner(port: number, timeoutMs: number): Promise<string> {
  return new Promise<string>((resolve) => {
    let got = '';
    const sock = connect(port, '127.0.0.1');
    const done = (): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve(got.split('\r\n')[0] ?? '');
    };
    const timer = setTimeout(done, timeoutMs);
    sock.setEncoding('latin1');
    sock.on('data', (s: string) => {
      got += s;
      if (got.includes('\n')) done();
    });
    sock.on('error', done);
    sock.on('close', done);
  });
}

/**
 * waitFor for a wait whose caller handles the timeout itself (a grace period
 * before SIGKILL, a start that reports its own error): false when `cond` did
 * not hold within `timeoutMs`.
 */
async function within(cond: () => boolean, what: string, timeoutMs: number): Promise<boolean> {
  try {
    await waitFor(cond, what, { timeoutMs, everyMs: 20 });
    return true;
  } catch (e) {
    if (e instanceof AssertionError) return false;
    throw e;
  }
}
