/**
 * What an agent's `ssh` asks the gateway to run, judged against its target's
 * `gateway:` entry. Pure: no I/O, no clock.
 *
 * Git sends `git-receive-pack '<path>'` (push) or `git-upload-pack '<path>'`
 * (fetch), the path single-quoted. Anything else is an exact command and must
 * equal one of the entry's `commands`, byte for byte. A repository matches a
 * catalog entry when both name the same path once a leading `/`, a trailing
 * `/` and a trailing `.git` are set aside (`git@host:org/repo.git` and
 * `ssh://host/org/repo` name the same thing); what is sent on is always the
 * catalog's spelling, so what runs is what the operator wrote.
 *
 * Invariants: a refusal names why in one line and carries the agent's text
 * only escaped and clipped; nothing that is not named by the entry is allowed.
 */
import { clipLabel } from '../../rules/clip.js';
import { GIT_PROGRAMS } from '../authority/gateway-binding.js';
import { escapeForTerminal } from '../../rules/terminal-text.js';
import type { ApprovalMode, Effect, SshGateway, SshTarget } from '../types.js';

type GitDirection = 'push' | 'fetch';

const PROGRAMS = GIT_PROGRAMS satisfies Record<GitDirection, string>;

type ParsedExec =
  | { readonly kind: 'git'; readonly direction: GitDirection; readonly path: string }
  | { readonly kind: 'command'; readonly command: string };

/** What the gateway may run for one exec request: the catalog's words, never the agent's. */
export type GatewayExec =
  | {
      readonly kind: 'git';
      readonly direction: GitDirection;
      readonly program: (typeof PROGRAMS)[GitDirection];
      /** The catalog's spelling of the repository. */
      readonly repository: string;
      readonly approval: ApprovalMode;
      /** Exactly what is sent to the destination: `git-receive-pack 'org/repo.git'`. */
      readonly command: string;
    }
  | { readonly kind: 'command'; readonly command: string; readonly approval: ApprovalMode; readonly effect: Effect };

export type GatewayVerdict = { readonly kind: 'allowed'; readonly exec: GatewayExec } | { readonly kind: 'refused'; readonly reason: string };

/** The agent's text, safe to put in a one-line message. */
export const shown = (s: string): string => clipLabel(escapeForTerminal(s), 120);

/** Splits a git exec request; anything else is a command line. */
export function parseExec(raw: string): ParsedExec {
  const m = /^(git-receive-pack|git-upload-pack) '([^']*)'$/.exec(raw);
  if (m === null) return { kind: 'command', command: raw };
  return { kind: 'git', direction: m[1] === 'git-receive-pack' ? 'push' : 'fetch', path: m[2] ?? '' };
}

/** The form two spellings of one repository share. */
export function repositoryKey(path: string): string {
  return path.replace(/^\//, '').replace(/\/+$/, '').replace(/\.git$/, '');
}

/** The exact remote command git's own ssh transport would send for `repository`. */
export function gitCommand(program: string, repository: string): string {
  return `${program} '${repository}'`;
}

function judgeGit(target: SshTarget, gw: SshGateway, p: Extract<ParsedExec, { kind: 'git' }>): GatewayVerdict {
  const git = gw.git;
  if (git === undefined) return { kind: 'refused', reason: `target ${target.name} allows no git through the gateway` };
  const mode = git[p.direction];
  if (mode === 'refused') return { kind: 'refused', reason: `git ${p.direction} is not allowed on target ${target.name}` };
  const key = repositoryKey(p.path);
  const repository = git.repositories.find((r) => repositoryKey(r) === key);
  if (repository === undefined || key === '') return { kind: 'refused', reason: `repository ${shown(p.path)} is not in the catalog for target ${target.name}` };
  const program = PROGRAMS[p.direction];
  return { kind: 'allowed', exec: { kind: 'git', direction: p.direction, program, repository, approval: mode, command: gitCommand(program, repository) } };
}

/** Whether `raw` (an exec request's command) may run through the gateway on `target`, and as what. */
export function judgeExec(target: SshTarget, raw: string): GatewayVerdict {
  const gw = target.gateway;
  if (gw === undefined) return { kind: 'refused', reason: `target ${target.name} has no gateway entry in the catalog` };
  const p = parseExec(raw);
  if (p.kind === 'git') return judgeGit(target, gw, p);
  const c = gw.commands.find((x) => x.command === raw);
  if (c === undefined) return { kind: 'refused', reason: `command "${shown(raw)}" is not in the catalog for target ${target.name}` };
  return { kind: 'allowed', exec: { kind: 'command', command: c.command, approval: c.approval, effect: c.effect } };
}

/** One line for the approval card and the journal: `git push to github.com:org/repo.git as git (key deploy)`. */
export function describeExec(target: SshTarget, e: GatewayExec): string {
  const as = `as ${target.user} (key ${target.credential})`;
  if (e.kind === 'command') return `run ${JSON.stringify(e.command)} on ${target.host}${target.port === 22 ? '' : `:${target.port}`} ${as}`;
  const repo = target.port === 22 ? `${target.host}:${e.repository}` : `ssh://${target.host}:${target.port}/${e.repository.replace(/^\//, '')}`;
  return `git ${e.direction} to ${repo} ${as}`;
}
