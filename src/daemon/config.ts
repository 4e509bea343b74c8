/**
 * Daemon settings: `config.yaml` in the home (optional), validated with zod.
 * Every field has a safe default; unknown fields are an error so a typo never
 * silently leaves a protection at its default.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { PosternError } from '../protocol/errors.js';

const ConfigSchema = z
  .object({
    approval_timeout_seconds: z.number().positive().max(86_400).default(120),
    /** 0 disables the idle lock. */
    idle_lock_minutes: z.number().min(0).max(10_080).default(0),
    /** How long a completed idempotency key keeps replaying its result; after that it may run again. */
    idempotency_retention_days: z.number().positive().max(3650).default(30),
    max_request_bytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
    max_depth: z.number().int().min(2).max(256).default(32),
    progress_interval_seconds: z.number().positive().max(300).default(5),
    http: z
      .object({
        connect_timeout_ms: z.number().int().positive().default(10_000),
        headers_timeout_ms: z.number().int().positive().default(30_000),
        body_timeout_ms: z.number().int().positive().default(30_000),
        max_response_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(1024 * 1024),
      })
      .strict()
      .default({ connect_timeout_ms: 10_000, headers_timeout_ms: 30_000, body_timeout_ms: 30_000, max_response_bytes: 1024 * 1024 }),
  })
  .strict();

export type DaemonConfig = z.infer<typeof ConfigSchema>;

export function parseConfig(text: string, file: string): DaemonConfig {
  let doc: unknown;
  try {
    doc = text.trim() === '' ? {} : parse(text);
  } catch (e) {
    throw new PosternError('INPUT_INVALID', `${file}: not valid YAML: ${(e as Error).message.split('\n')[0] ?? ''}`);
  }
  const r = ConfigSchema.safeParse(doc ?? {});
  if (!r.success) {
    const first = r.error.issues[0];
    const where = first === undefined ? '' : first.path.join('.') || '(top)';
    throw new PosternError('INPUT_INVALID', `${file}: ${where}: ${first?.message ?? 'invalid'}`);
  }
  return r.data;
}

export async function loadConfig(file: string): Promise<DaemonConfig> {
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new PosternError('FILE_IO', `cannot read ${file}`);
  }
  return parseConfig(text, file);
}
