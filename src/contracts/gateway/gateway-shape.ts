/**
 * The `gateway:` entry of an SSH target in `catalog.yaml`: what an agent may
 * run through Postern's local SSH gateway (docs/ssh-gateway.md). Strict zod
 * shapes, like the rest of the catalog (catalog-shape.ts): an unknown key is
 * an error, and a direction that is not named is refused, never defaulted to
 * open.
 *
 *   gateway:
 *     git: { repositories: [org/repo, org/docs], push: per-call, fetch: none }
 *     commands:
 *       - { command: "uptime", approval: none }
 *
 * `push` and `fetch` take an approval mode (`none`, `session`, `per-call`) or
 * `refused` (the default when absent). Repository paths are relative or
 * absolute slash-separated names of letters, digits, `.`, `_`, `-` with no
 * empty, `.` or `..` segment. Commands are exact strings, compared byte for
 * byte with what the client asks; printable ASCII only.
 */
import { z } from 'zod';
import { ApprovalModes, type GatewayMode, type SshGateway } from '../types.js';

const GatewayModes = [...ApprovalModes, 'refused'] as const satisfies readonly GatewayMode[];

/** A repository path as the catalog names it (and as the gateway sends it on). */
const REPOSITORY = /^\/?[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;
/** An exact command: printable ASCII, not starting with a space or "-". */
const GATEWAY_COMMAND = /^[\x21-\x2C\x2E-\x7E][\x20-\x7E]*$/;

const mode = z.enum(GatewayModes, { error: `must be one of ${GatewayModes.join(', ')}` });

const repository = z
  .string()
  .max(200)
  .regex(REPOSITORY, 'must be a repository path such as org/repo or org/repo.git (letters, digits, ".", "_", "-", separated by "/")')
  .refine((r) => !r.split('/').some((s) => s === '.' || s === '..'), 'may not have a "." or ".." segment');

const GatewayGitShape = z.strictObject({
  repositories: z.array(repository).min(1).max(256),
  push: mode.optional(),
  fetch: mode.optional(),
});

const GatewayCommandShape = z.strictObject({
  command: z.string().min(1).max(1024).regex(GATEWAY_COMMAND, 'must be printable ASCII, not starting with a space or "-"'),
  approval: z.enum(ApprovalModes, { error: `must be one of ${ApprovalModes.join(', ')}` }),
  effect: z.enum(['read', 'write', 'destructive']).optional(),
});

export const GatewayShape = z.strictObject({
  git: GatewayGitShape.optional(),
  commands: z.array(GatewayCommandShape).max(64).optional(),
});

type GatewayShapeOut = z.infer<typeof GatewayShape>;

/** The parsed entry: absent directions are refused; a command's effect defaults to write. */
export function buildGateway(g: GatewayShapeOut): SshGateway {
  return {
    git: g.git === undefined ? undefined : { repositories: [...new Set(g.git.repositories)], push: g.git.push ?? 'refused', fetch: g.git.fetch ?? 'refused' },
    commands: (g.commands ?? []).map((c) => ({ command: c.command, approval: c.approval, effect: c.effect ?? 'write' })),
  };
}
