/**
 * Host settings that weaken Postern's protection, judged from the raw text of
 * the kernel files that expose them. Pure: the caller reads the files (or
 * passes `undefined` when a file is missing) and prints the findings.
 */

import { belowFloorWarning, belowProductionFloor, describeKdf, TEST_KDF_SWITCH, type KdfParams, type KdfProfile } from '../vault/index.js';

export type Finding =
  | { readonly status: 'ok'; readonly check: string; readonly detail: string }
  | { readonly status: 'warning'; readonly check: string; readonly detail: string; readonly fix: string };

/** `/proc/sys/dev/tty/legacy_tiocsti`: 1 lets any process push keystrokes into a terminal. */
export function checkTiocsti(raw: string | undefined): Finding {
  const check = 'dev.tty.legacy_tiocsti';
  if (raw === undefined) {
    return {
      status: 'warning',
      check,
      detail: 'this kernel predates the setting (Linux < 6.2): a process can push keystrokes into your terminal (TIOCSTI)',
      fix: 'run the approval TUI in a terminal no agent process shares, or upgrade the kernel',
    };
  }
  if (raw.trim() === '0') return { status: 'ok', check, detail: 'terminal keystroke injection (TIOCSTI) is disabled' };
  return {
    status: 'warning',
    check,
    detail: 'a process can push keystrokes into your terminal (TIOCSTI) and could approve its own calls',
    fix: 'sudo sysctl -w dev.tty.legacy_tiocsti=0 (persist it in /etc/sysctl.d/)',
  };
}

/** `/proc/sys/kernel/yama/ptrace_scope`: 0 or absent lets same-user processes read the daemon's memory. */
export function checkPtraceScope(raw: string | undefined): Finding {
  const check = 'kernel.yama.ptrace_scope';
  const v = raw?.trim();
  if (v === '1' || v === '2' || v === '3') {
    return { status: 'ok', check, detail: `ptrace is restricted (scope ${v})` };
  }
  return {
    status: 'warning',
    check,
    detail:
      v === undefined
        ? 'Yama is not available: any process of your user can attach to the daemon and read its memory'
        : 'ptrace is unrestricted (scope 0): any process of your user can read the daemon\'s memory',
    fix: v === undefined ? 'run the daemon as a dedicated user, or use a kernel with Yama' : 'sudo sysctl -w kernel.yama.ptrace_scope=1 (persist it in /etc/sysctl.d/)',
  };
}

/** Core dumps, from `/proc/self/limits` ("Max core file size" soft limit). */
export function checkCoreDumps(limits: string | undefined): Finding {
  const check = 'core dumps';
  const line = limits?.split('\n').find((l) => l.startsWith('Max core file size'));
  const soft = line?.slice('Max core file size'.length).trim().split(/\s+/)[0];
  if (soft === '0') return { status: 'ok', check, detail: 'core dumps are off for this shell (ulimit -c 0)' };
  return {
    status: 'warning',
    check,
    detail: soft === undefined ? 'the core dump limit could not be read' : `core dumps are allowed (limit ${soft}): a crash could write secrets to disk`,
    fix: 'run `ulimit -c 0` in the shell that starts the daemon (or set LimitCORE=0 in its service)',
  };
}

/**
 * The vault's key-derivation cost (from its public header) and the test
 * switch in this environment (vault/kdf-profile.ts): either one below the
 * production floor makes a vault cheap to guess.
 */
export function checkVaultKdf(kdf: KdfParams | undefined, profile: KdfProfile): Finding[] {
  const out: Finding[] = [];
  const check = 'vault key derivation';
  if (kdf !== undefined) {
    out.push(
      belowProductionFloor(kdf)
        ? { status: 'warning', check, detail: belowFloorWarning(kdf), fix: 'make a real vault (`postern init` in a new home, without POSTERN_TEST_KDF) and add the secrets to it' }
        : { status: 'ok', check, detail: `${describeKdf(kdf)} (at or above the production floor)` },
    );
  }
  if (profile.name === 'test') {
    out.push({
      status: 'warning',
      check: TEST_KDF_SWITCH,
      detail: `is set in this environment: new vaults and passphrase changes use ${describeKdf(profile.create)}, and vaults that cheap are opened`,
      fix: `unset ${TEST_KDF_SWITCH} (only the test suite sets it) and look for what set it (shell profile, service unit)`,
    });
  }
  return out;
}
