/**
 * The SSH gateway's files in the home (docs/ssh-gateway.md):
 *
 * - `ssh-gateway/host_ed25519` (0600): the gateway's own host key; its public
 *   half is what `postern setup ssh` pins for the client (known_hosts, under
 *   the alias `postern-gateway`).
 * - `ssh-gateway/client_ed25519[.pub]` (0600): the key the agent's `ssh` logs
 *   in to the gateway with. It opens the gateway only, never a destination.
 * - `ssh-gateway.authorized.json`: the operator's authorization, a MAC under
 *   a vault-derived key over the port and both public keys — `ssh_gateway:
 *   enabled: true` in config.yaml alone, or a swapped key file, opens nothing.
 * - `run/ssh-gateway.json`: the port of the running gateway.
 *
 * Invariants: keys are made once (exclusive create) and never printed
 * whole except the public halves; a record for another port or other keys,
 * a malformed or forged one, authorizes nothing.
 */
import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ssh2 } from '../libraries.js';
import { z } from 'zod';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile } from './atomic-write.js';
import { macVerifies, readMacdRecord, writeMacdRecord, type ReadMacdRecord } from './macd-record.js';
import type { HomePaths } from './paths.js';
import { readRunInfo } from './run-info.js';

export const GATEWAY_HOST_ALIAS = 'postern-gateway';
const FORMAT = 'postern.ssh-gateway-authorization/1';
const MAC_DOMAIN = 'postern ssh-gateway authorization v1\n';

interface GatewayPaths {
  readonly dir: string;
  readonly hostKey: string;
  readonly clientKey: string;
  readonly clientPub: string;
  readonly knownHosts: string;
  readonly sshConfig: string;
  readonly authorization: string;
  readonly info: string;
}

export function gatewayPaths(paths: HomePaths): GatewayPaths {
  const dir = join(paths.home, 'ssh-gateway');
  return {
    dir,
    hostKey: join(dir, 'host_ed25519'),
    clientKey: join(dir, 'client_ed25519'),
    clientPub: join(dir, 'client_ed25519.pub'),
    knownHosts: join(dir, 'known_hosts'),
    sshConfig: join(dir, 'ssh_config'),
    authorization: join(paths.home, 'ssh-gateway.authorized.json'),
    info: join(paths.runDir, 'ssh-gateway.json'),
  };
}

export interface GatewayKeys {
  /** OpenSSH private key text of the host key. */
  readonly hostKey: string;
  /** `ssh-ed25519 AAAA…` */
  readonly hostPublic: string;
  readonly clientPublic: string;
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new PosternError('FILE_IO', `cannot read ${file}`);
  }
}

/** The public line of an OpenSSH private key. */
function publicLine(privateText: string, file: string): string {
  const k = ssh2().utils.parseKey(privateText);
  if (k instanceof Error || Array.isArray(k)) throw new PosternError('INPUT_INVALID', `${file} is not a valid SSH private key`);
  return `${k.type} ${k.getPublicSSH().toString('base64')}`;
}

/** The gateway's keys as they are on disk, or null when `postern ssh-gateway enable` has not made them yet. */
export async function readGatewayKeys(paths: HomePaths): Promise<GatewayKeys | null> {
  const g = gatewayPaths(paths);
  const host = await readText(g.hostKey);
  const client = await readText(g.clientKey);
  if (host === null || client === null) return null;
  return { hostKey: host, hostPublic: publicLine(host, g.hostKey), clientPublic: publicLine(client, g.clientKey) };
}

/**
 * A new ed25519 pair that ssh2 reads back: about one pair in 150 that ssh2 makes, it then
 * refuses to parse ("Malformed OpenSSH private key"), so such a pair is made again.
 */
function newKeyPair(comment: string): { private: string; public: string } {
  for (let i = 0; i < 16; i++) {
    const pair = ssh2().utils.generateKeyPairSync('ed25519', { comment });
    const k = ssh2().utils.parseKey(pair.private);
    if (!(k instanceof Error) && !Array.isArray(k)) return pair;
  }
  throw new PosternError('INTERNAL', 'no SSH key pair could be made that reads back');
}

/** The gateway's keys, made on first use. */
export async function ensureGatewayKeys(paths: HomePaths): Promise<GatewayKeys> {
  const g = gatewayPaths(paths);
  await mkdir(g.dir, { recursive: true, mode: 0o700 });
  let host = await readText(g.hostKey);
  if (host === null) {
    host = newKeyPair('postern-gateway-host').private;
    await atomicWriteFile(g.hostKey, host);
  }
  let client = await readText(g.clientKey);
  if (client === null) {
    const pair = newKeyPair('postern-gateway-client');
    client = pair.private;
    await atomicWriteFile(g.clientKey, client);
    await atomicWriteFile(g.clientPub, `${pair.public}\n`);
  }
  return { hostKey: host, hostPublic: publicLine(host, g.hostKey), clientPublic: publicLine(client, g.clientKey) };
}

const RecordSchema = z.object({ format: z.literal(FORMAT), port: z.number().int().min(0).max(65_535), host_key: z.string().max(1024), client_key: z.string().max(1024), authorized_at: z.string().max(64) }).strict();
type GatewayAuthorization = z.infer<typeof RecordSchema>;

export async function writeGatewayAuthorization(paths: HomePaths, key: Uint8Array, port: number, keys: GatewayKeys, at: Date): Promise<void> {
  const record: GatewayAuthorization = { format: FORMAT, port, host_key: keys.hostPublic, client_key: keys.clientPublic, authorized_at: at.toISOString() };
  await writeMacdRecord(gatewayPaths(paths).authorization, key, MAC_DOMAIN, record);
}

export function readGatewayAuthorization(paths: HomePaths): Promise<ReadMacdRecord<GatewayAuthorization>> {
  return readMacdRecord(gatewayPaths(paths).authorization, RecordSchema);
}

export type GatewayVerdict = { readonly kind: 'authorized' } | { readonly kind: 'refused'; readonly reason: string };

/** Whether the gateway on `port` with `keys` was authorized with this vault's key. */
export function judgeGatewayAuthorization(key: Uint8Array, found: ReadMacdRecord<GatewayAuthorization>, port: number, keys: GatewayKeys): GatewayVerdict {
  switch (found.kind) {
    case 'none':
      return { kind: 'refused', reason: 'config.yaml enables it, but it was never authorized with the passphrase' };
    case 'malformed':
      return { kind: 'refused', reason: 'ssh-gateway.authorized.json is malformed' };
    case 'stored': {
      const r = found.stored.record;
      if (!macVerifies(key, MAC_DOMAIN, r, found.stored.mac)) return { kind: 'refused', reason: 'its authorization does not verify with this vault (forged, from another vault, or from before a passphrase change)' };
      if (r.port !== port) return { kind: 'refused', reason: `it was authorized for port ${r.port}, and config.yaml now names port ${port}` };
      if (r.host_key !== keys.hostPublic || r.client_key !== keys.clientPublic) return { kind: 'refused', reason: 'its key files are not the ones that were authorized' };
      return { kind: 'authorized' };
    }
  }
}

export async function removeGatewayAuthorization(paths: HomePaths): Promise<boolean> {
  try {
    await unlink(gatewayPaths(paths).authorization);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new PosternError('FILE_IO', 'cannot remove ssh-gateway.authorized.json');
  }
}

const InfoSchema = z.object({ port: z.number().int().min(1).max(65_535), pid: z.number().int().positive() }).strict();
type GatewayInfo = z.infer<typeof InfoSchema>;

export async function writeGatewayInfo(paths: HomePaths, info: GatewayInfo): Promise<void> {
  await atomicWriteFile(gatewayPaths(paths).info, `${JSON.stringify(info)}\n`);
}

export async function removeGatewayInfo(paths: HomePaths): Promise<void> {
  await unlink(gatewayPaths(paths).info).catch(() => undefined);
}

/** The running gateway, or null (none, malformed, or left by a daemon that died). */
export function readGatewayInfo(paths: HomePaths): Promise<GatewayInfo | null> {
  return readRunInfo(gatewayPaths(paths).info, InfoSchema);
}
