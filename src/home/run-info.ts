/**
 * A small JSON file in the run directory where a running daemon says where a
 * listener of its is (`run/mcp-http.json`, `run/approval-page.json`). One
 * reader for them all: a file is trusted only while the pid it names is
 * alive, so one left by a daemon that died reads as nothing.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';

export async function readRunInfo<S extends z.ZodType<{ pid: number }>>(file: string, schema: S): Promise<z.infer<S> | null> {
  try {
    const r = schema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    if (!r.success) return null;
    process.kill(r.data.pid, 0);
    return r.data;
  } catch {
    return null;
  }
}
