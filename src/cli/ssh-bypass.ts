/**
 * `postern doctor`'s check of the ways around the SSH gateway: with the
 * gateway enabled, the agent's user should hold no SSH credential of its own.
 * Two findings:
 *
 * - private keys in `~/.ssh` (files whose text is a private key in any PEM,
 *   OpenSSH or PuTTY form): any process of the user can reach every host
 *   that trusts them without asking Postern;
 * - an `SSH_AUTH_SOCK` that reaches an ssh-agent holding keys (asked with
 *   OpenSSH's own `ssh-add -l`): the agent signs for whoever reaches the
 *   socket. A socket with no keys, or no agent answering, is ok.
 *
 * Only names and counts are reported, never a key's bytes; a file name (the
 * user's, maybe the agent's) is escaped like any untrusted text. Doctor runs
 * as the operator: this is the agent's user only when both are the same user
 * and the environment is the agent's (docs/ssh-gateway.md). Agents that run
 * as other OS users (the allow list, docs/agent-users.md) are checked too:
 * each allowed user's — and each allowed group's members' — `~/.ssh`, found
 * through the system's user database (`getent`). Their ssh-agents are out of
 * reach (another user's environment); a `~/.ssh` the operator may not read is
 * said, not passed over.
 */
import { execFile } from 'node:child_process';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentUserEntry } from '../home/agent-users.js';
import type { Finding } from '../home/host-checks.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';

/** The first line of a private key file, whatever tool wrote it. */
const PRIVATE_KEY_START = /^(?:-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----|PuTTY-User-Key-File-\d+:)/m;
/** Enough of a file to find its first line past a few comment lines; key files are small. */
const HEAD_BYTES = 4096;
const MAX_KEY_FILE_BYTES = 64 * 1024;

const KEY_CHECK = 'agent SSH keys';
const AGENT_CHECK = 'agent SSH_AUTH_SOCK';

async function head(path: string): Promise<string | null> {
  try {
    const s = await stat(path);
    if (!s.isFile() || s.size > MAX_KEY_FILE_BYTES) return null;
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(HEAD_BYTES);
      const { bytesRead } = await fh.read(buf, 0, HEAD_BYTES, 0);
      return buf.subarray(0, bytesRead).toString('latin1');
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
}

/** The names of the files in `dir` that hold a private key (sorted); [] when there is no such folder, null when it may not be read. */
async function privateKeyFiles(dir: string): Promise<string[] | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'EACCES' || code === 'EPERM' ? null : [];
  }
  const found: string[] = [];
  for (const name of names.sort()) {
    const text = await head(join(dir, name));
    if (text !== null && PRIVATE_KEY_START.test(text)) found.push(name);
  }
  return found;
}

/** The finding for one user's `~/.ssh`; `user` names another OS user an agent runs as (the check's name says whose). */
export function keysFinding(dir: string, names: readonly string[] | null, user?: string): Finding {
  const check = user === undefined ? KEY_CHECK : `${KEY_CHECK} (user ${user})`;
  if (names === null) {
    return {
      status: 'warning',
      check,
      detail: `${sanitizeForTerminal(dir)} may not be read by this user, so whether it holds private keys is unknown`,
      fix: `run \`sudo postern doctor\` (with POSTERN_HOME set to this home), or look as ${user ?? 'that user'}: \`ls -l ~/.ssh\``,
    };
  }
  if (names.length === 0) return { status: 'ok', check, detail: `no private key in ${sanitizeForTerminal(dir)}` };
  const shown = names.slice(0, 8).map((n) => sanitizeForTerminal(n, 64)).join(', ') + (names.length > 8 ? `, +${names.length - 8} more` : '');
  return {
    status: 'warning',
    check,
    detail: `${sanitizeForTerminal(dir)} holds ${names.length} private key file(s) (${shown}): any process of ${user === undefined ? 'this user' : user}, the agent's included, can reach the hosts that trust them without the SSH gateway and without approval`,
    fix: 'move each key into the vault (`postern secret add NAME --kind ssh_key --from-file FILE`, named in a target\'s gateway entry), then delete the file; or run the agent as another OS user (docs/agent-users.md)',
  };
}

/** What `ssh-add -l` said of an agent socket. */
type AgentAnswer = { readonly kind: 'keys'; readonly count: number } | { readonly kind: 'empty' } | { readonly kind: 'unreachable' } | { readonly kind: 'unknown' };

/** Asks the agent at `sock` how many keys it holds, with OpenSSH's `ssh-add -l` (exit 0: keys, 1: none, 2: no agent). */
function askAgent(sock: string): Promise<AgentAnswer> {
  return new Promise((resolve) => {
    execFile('ssh-add', ['-l'], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SSH_AUTH_SOCK: sock, LC_ALL: 'C' }, timeout: 5000 }, (err, stdout) => {
      if (err === null) return resolve({ kind: 'keys', count: stdout.split('\n').filter((l) => l.trim() !== '').length });
      const code = (err as { code?: unknown }).code;
      if (code === 1) return resolve({ kind: 'empty' });
      if (code === 2) return resolve({ kind: 'unreachable' });
      resolve({ kind: 'unknown' });
    });
  });
}

function agentFinding(sock: string | undefined, answer: AgentAnswer | null): Finding {
  if (sock === undefined || sock === '') return { status: 'ok', check: AGENT_CHECK, detail: 'SSH_AUTH_SOCK is not set' };
  const where = sanitizeForTerminal(sock, 120);
  const fix = 'unset SSH_AUTH_SOCK in the environment the agent starts in (`env -u SSH_AUTH_SOCK …` in its launcher), or empty that ssh-agent (`ssh-add -D`)';
  if (answer === null || answer.kind === 'unreachable') return { status: 'ok', check: AGENT_CHECK, detail: `SSH_AUTH_SOCK is set (${where}) but no ssh-agent answers there` };
  if (answer.kind === 'empty') return { status: 'ok', check: AGENT_CHECK, detail: `SSH_AUTH_SOCK reaches an ssh-agent that holds no key (${where})` };
  const held = answer.kind === 'keys' ? `an ssh-agent holding ${answer.count} key(s)` : 'a socket `ssh-add -l` could not ask (is OpenSSH installed?)';
  return {
    status: 'warning',
    check: AGENT_CHECK,
    detail: `SSH_AUTH_SOCK reaches ${held} (${where}): any process with this environment, the agent's included, can have it sign in to the hosts that trust those keys without the SSH gateway`,
    fix,
  };
}

/** Both findings for the user whose home is `userHome` and whose environment is `env`. */
export async function sshBypassFindings(userHome: string, env: NodeJS.ProcessEnv): Promise<Finding[]> {
  const dir = join(userHome, '.ssh');
  const sock = env['SSH_AUTH_SOCK'];
  let answer: AgentAnswer | null = null;
  if (sock !== undefined && sock !== '') {
    answer = await stat(sock).then(
      (s) => (s.isSocket() ? askAgent(sock) : { kind: 'unreachable' as const }),
      () => ({ kind: 'unreachable' as const }),
    );
  }
  return [keysFinding(dir, await privateKeyFiles(dir)), agentFinding(sock, answer)];
}

/** An OS user an agent may run as, and its home, from the system's user database. */
interface AgentAccount {
  readonly name: string;
  readonly home: string;
}

/** `getent DB [KEY]`'s lines; [] when there is no such entry or no getent. */
function getent(db: 'passwd' | 'group', key?: string): Promise<string[]> {
  return new Promise((resolve) => {
    execFile('getent', key === undefined ? [db] : [db, key], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' }, timeout: 10_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      resolve(err === null ? stdout.split('\n').filter((l) => l !== '') : []);
    });
  });
}

/**
 * The accounts the allow list names: each user, and each group's members and
 * the users whose primary group it is — without `except` (the operator, whose
 * own `~/.ssh` is checked apart). Names the database does not know are left
 * out (the daemon allows nobody by them either).
 */
export async function allowedAccounts(entries: readonly AgentUserEntry[], except: string | null): Promise<AgentAccount[]> {
  if (entries.length === 0) return [];
  const passwd = (await getent('passwd')).map((l) => l.split(':')).filter((f) => f.length >= 7);
  const names = new Set<string>();
  for (const e of entries) {
    if (e.kind === 'user') {
      names.add(e.name);
      continue;
    }
    const [group] = await getent('group', e.name);
    const f = group?.split(':');
    if (f === undefined || f.length < 4) continue;
    for (const m of (f[3] ?? '').split(',')) if (m !== '') names.add(m);
    for (const p of passwd) if (p[3] === f[2] && p[0] !== undefined) names.add(p[0]);
  }
  const accounts: AgentAccount[] = [];
  for (const p of passwd) {
    const [name, , , , , home] = p;
    if (name !== undefined && home !== undefined && names.has(name) && name !== except && home !== '') accounts.push({ name, home });
  }
  return accounts.sort((a, b) => a.name.localeCompare(b.name));
}

/** The key finding of each allowed account's `~/.ssh`. */
export async function allowedAccountFindings(accounts: readonly AgentAccount[]): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const a of accounts) {
    const dir = join(a.home, '.ssh');
    out.push(keysFinding(dir, await privateKeyFiles(dir), a.name));
  }
  return out;
}
