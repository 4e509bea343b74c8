/**
 * `run/mcp-http.json`: where a running daemon's HTTP listener says its URL
 * and token file, for `postern http status` and `postern setup json --http`.
 * One home for the file's shape: the daemon writes it (0600, atomically) once
 * its port is bound and removes it when the listener closes; a reader trusts
 * it only while the pid it names is alive.
 */
import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { atomicWriteFile } from './atomic-write.js';
import type { HomePaths } from './paths.js';
import { readRunInfo } from './run-info.js';

const InfoSchema = z.object({ url: z.string().max(200), token_file: z.string().max(4096), pid: z.number().int().positive() }).strict();
type HttpListenerInfo = z.infer<typeof InfoSchema>;

export async function writeListenerInfo(paths: HomePaths, info: HttpListenerInfo): Promise<void> {
  await atomicWriteFile(paths.mcpHttpInfo, `${JSON.stringify(info)}\n`);
}

export async function removeListenerInfo(paths: HomePaths): Promise<void> {
  await unlink(paths.mcpHttpInfo).catch(() => undefined);
}

/** The running listener, or null (no file, a malformed one, or one left by a daemon that died). */
export function readListenerInfo(paths: HomePaths): Promise<HttpListenerInfo | null> {
  return readRunInfo(paths.mcpHttpInfo, InfoSchema);
}
