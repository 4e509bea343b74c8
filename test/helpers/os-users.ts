/**
 * Real second OS users for the tests of agents that run as another user
 * (docs/agent-users.md). Creating users needs root and useradd: a test is
 * skipped with the reason otherwise, and POSTERN_REQUIRE_OS_USERS=1 (CI)
 * makes that a failure.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function osUsersSkip(): string | false {
  const why = process.getuid?.() !== 0 ? 'not running as root' : !existsSync('/usr/sbin/useradd') ? '/usr/sbin/useradd is absent' : !existsSync('/usr/bin/perl') ? '/usr/bin/perl is absent' : null;
  if (why === null) return false;
  if (process.env['POSTERN_REQUIRE_OS_USERS'] === '1') throw new Error(`POSTERN_REQUIRE_OS_USERS=1 but ${why}`);
  return `${why} (a second OS user is needed; POSTERN_REQUIRE_OS_USERS=1 makes this a failure)`;
}

/**
 * The user's uid and gid, creating the user (no login; no home made) the
 * first time. `home` sets the home the user database names (made again on
 * every call, so a rerun points it at this run's directory); `groups` are
 * supplementary groups, created when missing.
 */
export function agentUser(user: string, o: { home?: string; groups?: readonly string[] } = {}): { uid: number; gid: number } {
  const run = (cmd: string, args: readonly string[]): void => {
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  };
  for (const g of o.groups ?? []) if (spawnSync('getent', ['group', g]).status !== 0) run('/usr/sbin/groupadd', ['--system', g]);
  const id = (flag: string): number => Number(spawnSync('id', [flag, user], { encoding: 'utf8' }).stdout.trim());
  if (spawnSync('id', [user]).status !== 0) run('/usr/sbin/useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user]);
  if (o.home !== undefined) run('/usr/sbin/usermod', ['--home', o.home, user]);
  if (o.groups !== undefined && o.groups.length > 0) run('/usr/sbin/usermod', ['--append', '--groups', o.groups.join(','), user]);
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Lets other users reach `path` (the checkout's built CLI, which a second user runs): each
 * ancestor directory that others may not search gets o+x (search by name only, nothing listed),
 * since a checkout under `mktemp -d` (0700) is otherwise out of their reach. Returns what puts
 * the modes back.
 */
export function reachableByOthers(path: string): () => void {
  const changed: [string, number][] = [];
  for (let d = dirname(resolve(path)); ; d = dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      chmodSync(d, mode | 0o001);
      changed.push([d, mode]);
    }
    if (dirname(d) === d) break;
  }
  return () => {
    for (const [d, mode] of changed.reverse()) chmodSync(d, mode);
  };
}
