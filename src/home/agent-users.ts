/**
 * The operator's list of other OS users (and groups) allowed to reach the
 * agent socket (docs/agent-users.md): `agents.allowed.json` in the home,
 * MAC'd under the vault's catalog-mac key with its own domain string
 * (macd-record.ts), so an agent that edits it is detected. `postern agents
 * allow|revoke` (passphrase) write it; the daemon reads and verifies it for
 * every connection on the shared agent socket, so a revocation holds from
 * the next connection on.
 *
 * Invariants: a missing record allows nobody but the operator; a malformed
 * or forged one allows nobody but the operator, and the daemon says so
 * (an alarm line in its log); names are OS user or group names, never uids.
 */
import { z } from 'zod';
import { PosternError } from '../rules/errors.js';
import { macVerifies, readMacdRecord, writeMacdRecord, type MacdRecordKind, type ReadMacdRecord } from './macd-record.js';
import type { HomePaths } from './paths.js';

const AGENT_USERS_FORMAT = 'postern.agent-users/1';
const MAC_DOMAIN = 'postern agent users v1\n';

/** A POSIX-portable user or group name (useradd's rule, with a trailing `$` for machine accounts). */
const OS_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$/;

const EntrySchema = z.object({ kind: z.enum(['user', 'group']), name: z.string().regex(OS_NAME) }).strict();
export type AgentUserEntry = z.infer<typeof EntrySchema>;

const RecordSchema = z
  .object({
    format: z.literal(AGENT_USERS_FORMAT),
    allowed: z.array(EntrySchema).max(256),
    updated_at: z.string().max(64),
  })
  .strict();
type AgentUsersRecord = z.infer<typeof RecordSchema>;

export const AGENT_USERS: MacdRecordKind<AgentUsersRecord> = {
  name: 'agent users',
  domain: MAC_DOMAIN,
  schema: RecordSchema,
  file: (paths) => paths.agentUsers,
  redo: 'run `postern agents allow USER` to write the list again',
};

type AgentUsersVerdict =
  | { readonly kind: 'none' }
  | { readonly kind: 'allowed'; readonly allowed: readonly AgentUserEntry[] }
  | { readonly kind: 'refused'; readonly reason: string };

export function readAgentUsers(paths: HomePaths): Promise<ReadMacdRecord<AgentUsersRecord>> {
  return readMacdRecord(paths.agentUsers, RecordSchema);
}

/** Whether the list was written with this vault's key, and whom it allows. */
export function judgeAgentUsers(key: Uint8Array, found: ReadMacdRecord<AgentUsersRecord>): AgentUsersVerdict {
  switch (found.kind) {
    case 'none':
      return { kind: 'none' };
    case 'malformed':
      return { kind: 'refused', reason: 'agents.allowed.json is malformed' };
    case 'stored':
      if (!macVerifies(key, MAC_DOMAIN, found.stored.record, found.stored.mac)) return { kind: 'refused', reason: 'agents.allowed.json does not verify with this vault (forged, from another vault, or from before a passphrase change)' };
      return { kind: 'allowed', allowed: found.stored.record.allowed };
  }
}

/** Whether a peer (its user name and group names) is on the list. */
export function isAllowed(allowed: readonly AgentUserEntry[], user: string | null, groups: readonly string[]): boolean {
  return allowed.some((e) => (e.kind === 'user' ? user !== null && e.name === user : groups.includes(e.name)));
}

export function parseEntryName(name: string): string {
  if (!OS_NAME.test(name)) throw new PosternError('USAGE', `"${name.slice(0, 40)}" is not a user or group name`);
  return name;
}

export async function writeAgentUsers(paths: HomePaths, key: Uint8Array, allowed: readonly AgentUserEntry[], at: Date): Promise<AgentUsersRecord> {
  const record: AgentUsersRecord = { format: AGENT_USERS_FORMAT, allowed: [...allowed], updated_at: at.toISOString() };
  const ok = RecordSchema.safeParse(record);
  if (!ok.success) throw new PosternError('USAGE', ok.error.issues[0]?.message ?? 'invalid agent users');
  await writeMacdRecord(paths.agentUsers, key, MAC_DOMAIN, record);
  return record;
}
