/**
 * Which local process is on the other end of a gateway connection, for the
 * approval card's context: the TCP peer on loopback found through Linux's
 * /proc — the connection's socket inode in /proc/net/tcp (the row whose local
 * end is the client's port and whose remote end is the gateway's), the
 * process holding `socket:[inode]` among /proc/<pid>/fd, then its
 * /proc/<pid>/cmdline and up to three of its ancestors' (so `git push …`
 * shows behind the `ssh` that git started, through git's shell if any).
 *
 * What it finds is the agent's own text (any process can name its argv): it
 * is context, never authority, and is escaped and redacted like any argument
 * wherever it is shown. A process of another user (its fd folder unreadable),
 * a connection already gone, or a system without /proc gives `found: false`
 * with why, which the card says as such. Never throws.
 */
import { endianness } from 'node:os';
import { readdir, readFile, readlink } from 'node:fs/promises';

export type PeerProcess =
  | { readonly found: true; readonly pid: number; readonly command: string; readonly parents: readonly { readonly pid: number; readonly command: string }[] }
  | { readonly found: false; readonly why: string };

/** A process's argv as one line: arguments with spaces or quotes single-quoted (shell style), at most `max` characters. */
export function commandLine(raw: Buffer, max = 1000): string {
  const args = raw.toString('utf8').split('\0');
  if (args.at(-1) === '') args.pop();
  const line = args.map((a) => (a !== '' && /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`)).join(' ');
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** `0100007F:1F90` → `127.0.0.1:8080`, reading the address in this machine's byte order as the kernel writes it. */
function hexEndpoint(hex: string): string | null {
  const m = /^([0-9A-F]{8}):([0-9A-F]{4})$/i.exec(hex);
  if (m === null) return null;
  const n = Buffer.from(m[1]!, 'hex');
  const bytes = endianness() === 'LE' ? [...n].reverse() : [...n];
  return `${bytes.join('.')}:${parseInt(m[2]!, 16)}`;
}

/** The inode of the socket whose local end is `local` and remote end `remote` in /proc/net/tcp's text (null: no such row). */
export function socketInode(table: string, local: string, remote: string): number | null {
  for (const row of table.split('\n').slice(1)) {
    const f = row.trim().split(/\s+/);
    if (f.length < 10) continue;
    if (hexEndpoint(f[1]!) === local && hexEndpoint(f[2]!) === remote) {
      const inode = Number(f[9]);
      return Number.isSafeInteger(inode) && inode > 0 ? inode : null;
    }
  }
  return null;
}

async function holderOf(inode: number): Promise<number | null> {
  const want = `socket:[${inode}]`;
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid);
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process, or gone
    }
    for (const fd of fds) {
      const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => null);
      if (link === want) return Number(pid);
    }
  }
  return null;
}

async function processOf(pid: number): Promise<{ command: string; ppid: number | null } | null> {
  try {
    const [cmdline, status] = await Promise.all([readFile(`/proc/${pid}/cmdline`), readFile(`/proc/${pid}/status`, 'utf8')]);
    const ppid = /^PPid:\s*(\d+)$/m.exec(status)?.[1];
    return { command: commandLine(cmdline), ppid: ppid === undefined ? null : Number(ppid) };
  } catch {
    return null;
  }
}

/** How many ancestors are named: ssh, git's shell, git, and what started git. */
const ANCESTORS = 3;

/** The process connected from 127.0.0.1:`clientPort` to the gateway on 127.0.0.1:`gatewayPort`. */
export async function findPeerProcess(clientPort: number, gatewayPort: number): Promise<PeerProcess> {
  let table: string;
  try {
    table = await readFile('/proc/net/tcp', 'utf8');
  } catch {
    return { found: false, why: 'this system has no /proc/net/tcp to find it in' };
  }
  try {
    const inode = socketInode(table, `127.0.0.1:${clientPort}`, `127.0.0.1:${gatewayPort}`);
    if (inode === null) return { found: false, why: 'its connection is not in /proc/net/tcp (already closed?)' };
    const pid = await holderOf(inode);
    if (pid === null) return { found: false, why: "no process of the daemon's user holds its socket (another user's process?)" };
    const me = await processOf(pid);
    if (me === null) return { found: false, why: `process ${pid} could not be read (already gone?)` };
    const parents: { pid: number; command: string }[] = [];
    let up = me.ppid;
    while (up !== null && up > 1 && up !== process.pid && parents.length < ANCESTORS) {
      const p = await processOf(up);
      if (p === null) break;
      parents.push({ pid: up, command: p.command });
      up = p.ppid;
    }
    return { found: true, pid, command: me.command, parents };
  } catch {
    return { found: false, why: 'the process table could not be read' };
  }
}

/** The card's `requested_by` line: what was found, or that nothing was and why. */
export function describePeer(p: PeerProcess): string {
  if (!p.found) return `not found: ${p.why}`;
  return [`pid ${p.pid}: ${p.command}`, ...p.parents.map((a) => `started by pid ${a.pid}: ${a.command}`)].join('; ');
}
