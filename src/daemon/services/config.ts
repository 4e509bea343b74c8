/**
 * Daemon settings: `config.yaml` in the home (optional), validated with zod.
 * Every field has a safe default; unknown fields are an error so a typo never
 * silently leaves a protection at its default.
 */
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { DEFAULT_MAX_REQUEST_BYTES, MAX_REQUEST_BYTES_CEILING } from '../../protocol/agent-limits.js';
import { PosternError } from '../../rules/errors.js';

/** The HTTP listener's port when config.yaml names none. */
export const MCP_HTTP_DEFAULT_PORT = 7469;
/** The SSH gateway's port when config.yaml names none. */
const SSH_GATEWAY_DEFAULT_PORT = 7470;

const ConfigSchema = z
  .object({
    approval_timeout_seconds: z.number().positive().max(86_400).default(120),
    /** 0 disables the idle lock. */
    idle_lock_minutes: z.number().min(0).max(10_080).default(0),
    /** How long a completed idempotency key keeps replaying its result; after that it may run again. */
    idempotency_retention_days: z.number().positive().max(3650).default(30),
    max_request_bytes: z.number().int().min(1024).max(MAX_REQUEST_BYTES_CEILING).default(DEFAULT_MAX_REQUEST_BYTES),
    max_depth: z.number().int().min(2).max(256).default(32),
    /**
     * How long a call waits for approval when its client cannot be kept waiting (it sent no progress
     * token): it is then answered APPROVAL_PENDING, before the MCP SDKs' default 60 s request timeout.
     */
    approval_wait_without_progress_seconds: z.number().positive().max(86_400).default(45),
    progress_interval_seconds: z.number().positive().max(300).default(5),
    /**
     * No human approver (as `postern daemon --unattended`): the accepted catalog's pre-approval
     * rules approve at once, everything else needing approval is APPROVAL_UNAVAILABLE.
     */
    unattended: z.boolean().default(false),
    http: z
      .object({
        connect_timeout_ms: z.number().int().positive().default(10_000),
        headers_timeout_ms: z.number().int().positive().default(30_000),
        body_timeout_ms: z.number().int().positive().default(30_000),
        max_response_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(1024 * 1024),
        /** An idle kept-alive connection to a target closes after this long; 0: a connection per call. */
        keep_alive_seconds: z.number().min(0).max(600).default(4),
      })
      .strict()
      .default({ connect_timeout_ms: 10_000, headers_timeout_ms: 30_000, body_timeout_ms: 30_000, max_response_bytes: 1024 * 1024, keep_alive_seconds: 4 }),
    ssh: z
      .object({
        /** Whole call: waiting for a channel, connecting, and the command. */
        timeout_ms: z.number().int().positive().max(86_400_000).default(60_000),
        connect_timeout_ms: z.number().int().positive().max(600_000).default(10_000),
        /** Cap for stdout and for stderr, each. */
        max_output_bytes: z.number().int().positive().max(64 * 1024 * 1024).default(1024 * 1024),
        /** A pooled connection with no open channel is closed after this long. */
        idle_close_seconds: z.number().positive().max(86_400).default(60),
        max_channels_per_connection: z.number().int().min(1).max(64).default(4),
      })
      .strict()
      .default({ timeout_ms: 60_000, connect_timeout_ms: 10_000, max_output_bytes: 1024 * 1024, idle_close_seconds: 60, max_channels_per_connection: 4 }),
    /**
     * The optional Streamable HTTP MCP listener (src/daemon/http). Off unless
     * enabled here AND authorized with the passphrase (`postern http enable`,
     * src/home/http-authorization.ts): an agent that edits this file cannot open it.
     */
    mcp_http: z
      .object({
        enabled: z.boolean().default(false),
        /** Loopback only: no other address can be configured. */
        host: z.literal('127.0.0.1', { error: 'the HTTP listener binds 127.0.0.1 only' }).default('127.0.0.1'),
        /** 0: any free port (the daemon writes the URL it bound to run/mcp-http.json). */
        port: z.number().int().min(0).max(65_535).default(MCP_HTTP_DEFAULT_PORT),
        /** At most this many sessions at once; a new one closes the one idle the longest (src/daemon/http/listener.ts). */
        max_sessions: z.number().int().min(1).max(256).default(16),
      })
      .strict()
      .default({ enabled: false, host: '127.0.0.1', port: MCP_HTTP_DEFAULT_PORT, max_sessions: 16 }),
    /**
     * The optional local SSH gateway (src/daemon/ssh-gateway, docs/ssh-gateway.md). Off unless
     * enabled here AND authorized with the passphrase (`postern ssh-gateway enable`); 127.0.0.1 only.
     */
    ssh_gateway: z
      .object({
        enabled: z.boolean().default(false),
        /** 0: any free port (the daemon writes the port it bound to run/ssh-gateway.json). */
        port: z.number().int().min(0).max(65_535).default(SSH_GATEWAY_DEFAULT_PORT),
      })
      .strict()
      .default({ enabled: false, port: SSH_GATEWAY_DEFAULT_PORT }),
    /**
     * Shipping both journals to a team's PostgreSQL (src/daemon/lifecycle/ship-loop.ts, docs/teams.md). The
     * connection string is the vault credential `credential` names (kind postgres_url), never here.
     */
    ship: z
      .object({
        enabled: z.boolean().default(false),
        credential: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, { error: 'a credential name: lowercase letters, digits, dot, dash, underscore' }).default('ship'),
        /** Which machine this is in team queries; the host name by default. */
        home_name: z.string().min(1).max(64).regex(/^[\x21-\x7E][\x20-\x7E]*$/, { error: 'printable ASCII, not starting with a space' }).optional(),
        /** Entries per insert transaction. */
        batch: z.number().int().min(1).max(10_000).default(500),
        /** After a failure, the next try waits this long (doubling up to 32 times it). */
        retry_seconds: z.number().positive().max(3600).default(1),
      })
      .strict()
      .default({ enabled: false, credential: 'ship', batch: 500, retry_seconds: 1 }),
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
