/**
 * The shape of `catalog.yaml`, as strict zod schemas: every object rejects
 * unknown keys so a misspelt field is an error, not a silently ignored one.
 * Only structure is checked here; meaning (references, templates against the
 * input schema, origins, adapters) is checked by the builders, which receive
 * these parsed shapes. Schemas, bodies and adapter values stay `unknown`.
 */
import { z } from 'zod';
import { ApprovalModes, Effects, HttpMethods, PresenceModes } from '../types.js';
import { GatewayShape } from '../gateway/gateway-shape.js';

export const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** MCP tool names; `postern_` is reserved for built-in tools. */
import { TOOL_NAME } from '../../protocol/tool-name.js';
export { TOOL_NAME };
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const QUERY_NAME = /^[A-Za-z0-9._~-]{1,128}$/;
export const SSH_USER = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/;
const HOST_KEY = /^SHA256:[A-Za-z0-9+/]{43}=?$/;
export const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

const name = (what: string) => z.string().regex(NAME, `must be a ${what} name: lowercase letters, digits, ".", "_" or "-", at most 64`);

const HttpAuthShape = z.union([
  z.enum(['bearer', 'basic']),
  z.strictObject({ header: z.string().regex(HEADER_NAME, 'must be an HTTP header name') }),
  z.strictObject({ query: z.string().regex(QUERY_NAME, 'must be a query parameter name') }),
  z.strictObject({
    aws_sigv4: z.strictObject({
      region: z.string().regex(/^[a-z0-9-]{1,32}$/, 'must be an AWS region name such as us-east-1'),
      service: z.string().regex(/^[a-z0-9-]{1,64}$/, 'must be an AWS service signing name such as s3 or execute-api'),
    }),
  }),
  z.strictObject({
    oauth_client_credentials: z.strictObject({
      token_url: z.string().max(2048),
      // RFC 6749 scope-token: printable ASCII except space, quote and backslash.
      scopes: z.array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/, 'must be an OAuth scope (no spaces, quotes or backslashes)')).max(64).optional(),
    }),
  }),
  z.strictObject({
    oauth_refresh_token: z.strictObject({
      token_url: z.string().max(2048),
      // RFC 6749 scope-token: printable ASCII except space, quote and backslash.
      scopes: z.array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/, 'must be an OAuth scope (no spaces, quotes or backslashes)')).max(64).optional(),
    }),
  }),
  z.strictObject({ github_app: z.strictObject({ api: z.string().max(2048) }) }),
], { error: 'must be bearer, basic, { header: NAME }, { query: NAME }, { aws_sigv4: { region, service } }, { oauth_client_credentials: { token_url, scopes } }, { oauth_refresh_token: { token_url, scopes } } or { github_app: { api } }' });

const limitCount = (max: number) => z.int({ error: `must be a whole number from 1 to ${max}` }).min(1).max(max);
/** `limits:` on a tool or (as defaults) on a target; every field optional. */
const LimitsShape = z.strictObject({
  per_minute: limitCount(1_000_000).optional(),
  per_session: limitCount(1_000_000_000).optional(),
  per_run: limitCount(1_000_000_000).optional(),
  in_flight: limitCount(10_000).optional(),
});

export const HttpTargetShape = z.strictObject({
  origin: z.string().max(2048),
  credential: name('credential'),
  auth: HttpAuthShape,
  idempotency_header: z.boolean().optional(),
  allow_private: z.boolean().optional(),
  limits: LimitsShape.optional(),
});

export const SshTargetShape = z.strictObject({
  host: z.string().min(1).max(253),
  port: z.int().min(1).max(65535).optional(),
  user: z.string().regex(SSH_USER, 'must be a user name: letters, digits, ".", "_" or "-", not starting with "-"'),
  host_key: z.string().regex(HOST_KEY, 'must be an OpenSSH SHA256 fingerprint: "SHA256:" and 43 base64 characters').optional(),
  credential: name('credential'),
  limits: LimitsShape.optional(),
  gateway: GatewayShape.optional(),
});

const method = z.enum(HttpMethods, { error: `must be one of ${HttpMethods.join(', ')}` });
const stringMap = z.record(z.string(), z.string().max(8192));

export const HttpShape = z.strictObject({
  target: name('target'),
  method,
  path: z.string().max(2048),
  query: stringMap.optional(),
  headers: stringMap.optional(),
  body: z.unknown().optional(),
});

export const HttpRequestShape = z.strictObject({
  target: name('target'),
  methods: z.array(method).min(1).max(HttpMethods.length),
  paths: z.array(z.string().max(2048)).min(1).max(200),
  headers: stringMap.optional(),
});

export const SshShape = z.strictObject({
  target: name('target'),
  argv: z.array(z.string().max(8192)).min(1).max(256),
});

const fieldMap = z.record(z.string(), z.unknown());
const mappingMap = z.record(z.string(), z.array(z.strictObject({ from: z.unknown(), to: z.unknown() })).min(1));
const fieldName = z.string().min(1).max(128);

/** Results of the newer revision given back in the older one's shape (see OutputAdapter). */
const OutputAdapterShape = z.strictObject({
  unwrap: fieldName.optional(),
  renames: z.record(z.string(), fieldName).optional(),
  mappings: mappingMap.optional(),
  defaults: fieldMap.optional(),
  wrap: fieldName.optional(),
});

export const PreviousShape = z.union([
  z.enum(['pin', 'reject', 'adapt', 'migrate']).transform((policy) => ({ policy })),
  z.strictObject({ policy: z.literal('pin') }),
  z.strictObject({ policy: z.literal('reject') }),
  z.strictObject({
    policy: z.enum(['adapt', 'migrate']),
    renames: z.record(z.string(), z.string()).optional(),
    mappings: mappingMap.optional(),
    defaults: fieldMap.optional(),
    output: OutputAdapterShape.optional(),
  }),
], { error: 'must be pin, reject, adapt, migrate, or { policy: adapt | migrate, renames?, mappings?, defaults?, output? }' });

export const RevisionShape = z.strictObject({
  revision: z.int().min(1).max(1_000_000),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  http: z.unknown().optional(),
  http_request: z.unknown().optional(),
  ssh: z.unknown().optional(),
  previous: z.unknown().optional(),
  deprecated: z
    .union([
      z.string().regex(DATE, 'must be a date YYYY-MM-DD'),
      z.strictObject({ date: z.string().regex(DATE, 'must be a date YYYY-MM-DD'), replacement: z.string().regex(TOOL_NAME, 'must be a tool name').optional() }),
    ], { error: 'must be a date YYYY-MM-DD or { date, replacement? }' })
    .optional(),
  retired: z.strictObject({ replacement: z.string().regex(TOOL_NAME, 'must be a tool name').optional() }).optional(),
  semantic_change: z.string().min(1).max(1000).optional(),
  canary: z.strictObject({ sessions_percent: z.int().min(1).max(99) }).optional(),
});

export const ToolShape = z.strictObject({
  description: z.string().min(1).max(4000),
  effect: z.enum(Effects, { error: `must be one of ${Effects.join(', ')}` }),
  approval: z.union([
    z.enum(ApprovalModes),
    z.strictObject({ mode: z.enum(ApprovalModes), presence: z.enum(PresenceModes).optional() }),
  ], { error: `must be one of ${ApprovalModes.join(', ')}, or { mode: ${ApprovalModes.join(' | ')}, presence?: ${PresenceModes.join(' | ')} }` }),
  revisions: z.array(z.unknown()).min(1).max(1000),
  limits: LimitsShape.optional(),
  /** The OS users allowed to call the tool (docs/agent-users.md); absent: every user that reaches the agent socket. */
  agent_users: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$/, 'must be an OS user name')).min(1).max(256).optional(),
});

export const CatalogShape = z.strictObject({
  version: z.literal(1, { error: 'must be 1' }).optional(),
  targets: z.record(z.string(), z.unknown()).optional(),
  tools: z.record(z.string(), z.unknown()),
  preapprovals: z.record(z.string(), z.unknown()).optional(),
});

export type OutputAdapterInput = z.infer<typeof OutputAdapterShape>;
