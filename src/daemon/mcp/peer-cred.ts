/**
 * Who is on the other end of an agent-socket connection: the peer's
 * credentials from the kernel (SO_PEERCRED), and the OS user and groups of
 * its uid (docs/agent-users.md). Node has no SO_PEERCRED call, so a short
 * perl child reads it from the accepted socket, handed to it as an inherited
 * file descriptor number (never as a net.Socket, which Node would stop
 * reading). Perl is part of every Debian and Ubuntu base system.
 *
 * Invariants: any failure (no perl, no fd, an unexpected answer) gives
 * `null`, which the caller treats as a peer that is not allowed; the answer
 * is bounded and waited for at most PEER_CRED_TIMEOUT_MS; names come from
 * /etc/passwd and /etc/group, read afresh for each lookup.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

interface PeerCredentials {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

interface OsUser {
  /** null: the uid has no entry in /etc/passwd. */
  readonly name: string | null;
  readonly groups: readonly string[];
}

const PEER_CRED_TIMEOUT_MS = 5_000;
const SCRIPT = "use Socket; open(my $s, '+<&=3') or exit 1; my $c = getsockopt($s, SOL_SOCKET, SO_PEERCRED) or exit 1; my ($pid, $uid, $gid) = unpack('iII', $c); print \"$pid $uid $gid\\n\";";

/** The peer's pid, uid and gid as the kernel recorded them at connect, or null when they cannot be read. */
export function peerCredentials(socket: Socket): Promise<PeerCredentials | null> {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return Promise.resolve(null);
  return new Promise((resolve) => {
    let out = '';
    let settled = false;
    const done = (v: PeerCredentials | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(v);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('perl', ['-e', SCRIPT], { stdio: ['ignore', 'pipe', 'ignore', fd] });
    } catch {
      return done(null);
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done(null);
    }, PEER_CRED_TIMEOUT_MS);
    child.on('error', () => done(null));
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      if (out.length < 100) out += d;
    });
    child.on('close', (code) => {
      const m = /^(-?\d{1,10}) (\d{1,10}) (\d{1,10})\n$/.exec(out);
      done(code === 0 && m !== null ? { pid: Number(m[1]), uid: Number(m[2]), gid: Number(m[3]) } : null);
    });
  });
}

async function lines(file: string): Promise<string[][]> {
  try {
    return (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'));
  } catch {
    return [];
  }
}

/** The user name of `uid` and the names of the groups it belongs to (its primary group and every group listing it). */
export async function osUser(uid: number, gid: number | null = null, files = { passwd: '/etc/passwd', group: '/etc/group' }): Promise<OsUser> {
  const entry = (await lines(files.passwd)).find((f) => f.length >= 4 && Number(f[2]) === uid && f[2] !== '');
  const name = entry?.[0] ?? null;
  const primary = gid ?? (entry === undefined ? null : Number(entry[3]));
  const groups = (await lines(files.group))
    .filter((f) => f.length >= 3 && ((primary !== null && f[2] !== '' && Number(f[2]) === primary) || (name !== null && (f[3] ?? '').split(',').includes(name))))
    .map((f) => f[0] ?? '')
    .filter((g) => g !== '');
  return { name, groups: [...new Set(groups)] };
}

/** Whether `name` is a user, a group (or both) on this system, from /etc/passwd and /etc/group. */
export async function osNameKinds(name: string, files = { passwd: '/etc/passwd', group: '/etc/group' }): Promise<{ user: boolean; group: boolean }> {
  const [users, groups] = await Promise.all([lines(files.passwd), lines(files.group)]);
  return { user: users.some((f) => f[0] === name), group: groups.some((f) => f[0] === name) };
}
