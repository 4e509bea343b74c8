/**
 * The contract model: what a parsed, validated catalog looks like in memory.
 * Everything here is immutable data produced by `parseCatalog`; no other code
 * builds these objects, so every `Catalog` a caller holds has passed every
 * check (origins normalized, templates reference declared parameters, schemas
 * bounded, revisions strictly increasing, targets and replacements resolved).
 */
import type { StringTemplate } from './templates/string-template.js';
import type { PathTemplate, PathPattern } from './templates/path-template.js';

import type { JsonPrimitive, JsonValue } from './schema/json.js';
import type { BoundedPattern } from './schema/bounded-pattern.js';
import type { CompiledSchema } from './schema/schema-zod.js';

export type { JsonObject, JsonPrimitive, JsonValue } from './schema/json.js';
/** A JSON Schema input or output (schema/schema-zod.ts compiles it). */
export type { CompiledSchema } from './schema/schema-zod.js';

/** What a tool does to the world; ordered from least to most dangerous. */
export const Effects = ['read', 'write', 'destructive'] as const;
export type Effect = (typeof Effects)[number];

export const ApprovalModes = ['none', 'session', 'per-call'] as const;
export type ApprovalMode = (typeof ApprovalModes)[number];

/** Whether an approval given on the approval page needs a WebAuthn assertion (a passkey, user verified). */
export const PresenceModes = ['required', 'none'] as const;
export type PresenceMode = (typeof PresenceModes)[number];

export const HttpMethods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type HttpMethod = (typeof HttpMethods)[number];

/**
 * Budgets and rate limits of a tool (daemon/services/limits.ts counts them): calls
 * executed per minute (all sessions), per agent session, per declared run id,
 * and at most this many executing at once (all sessions). Absent = no limit.
 */
import { LimitNames, type LimitName } from '../protocol/limit-usage.js';
import type { AuthPlacement } from '../rules/credential-fit.js';
export { LimitNames, type LimitName };
export type Limits = { readonly [K in LimitName]?: number };

/** Where the executor puts the HTTP credential (one home: rules/credential-fit.ts). The name is part of the contract so templates cannot collide with it. */
export type HttpAuth = AuthPlacement;

export interface HttpTarget {
  readonly kind: 'http';
  readonly name: string;
  /** Normalized: lowercase scheme and host, punycode, no default port, no path. */
  readonly origin: string;
  readonly scheme: 'https' | 'http';
  readonly host: string;
  readonly port: number;
  readonly credential: string;
  readonly auth: HttpAuth;
  readonly idempotencyHeader: 'send' | 'omit';
  readonly privateNetwork: 'allowed' | 'refused';
  /** Default limits for the tools that call this target (a tool's own `limits` win, field by field). */
  readonly limits?: Limits;
}

export type HostKey = { readonly state: 'pinned'; readonly fingerprint: string } | { readonly state: 'untrusted' };

export interface SshTarget {
  readonly kind: 'ssh';
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly hostKey: HostKey;
  readonly credential: string;
  /** Default limits for the tools that call this target (a tool's own `limits` win, field by field). */
  readonly limits?: Limits;
  /** What an agent may run through the local SSH gateway on this target (src/contracts/gateway); absent: nothing. */
  readonly gateway?: SshGateway;
}

/** How the gateway treats one git direction: an approval mode, or refused. */
export type GatewayMode = ApprovalMode | 'refused';

/** An SSH target's `gateway:` entry, parsed (src/contracts/gateway/gateway-shape.ts). */
export interface SshGateway {
  readonly git: { readonly repositories: readonly string[]; readonly push: GatewayMode; readonly fetch: GatewayMode } | undefined;
  /** Exact command lines, compared byte for byte. */
  readonly commands: readonly { readonly command: string; readonly approval: ApprovalMode; readonly effect: Effect }[];
}

export type Target = HttpTarget | SshTarget;

/** `{{`/`}}` escapes, `{param}` placeholders; a body template is JSON with string templates at the leaves. */
export type BodyTemplate =
  | { readonly kind: 'literal'; readonly value: JsonPrimitive }
  | { readonly kind: 'param'; readonly param: string }
  | { readonly kind: 'text'; readonly template: StringTemplate }
  | { readonly kind: 'array'; readonly items: readonly BodyTemplate[] }
  | { readonly kind: 'object'; readonly entries: readonly (readonly [string, BodyTemplate])[] };

export interface NamedTemplate {
  readonly name: string;
  readonly value: StringTemplate;
}

/** A fixed HTTP request with typed holes. */
export interface HttpAction {
  readonly kind: 'http';
  readonly target: HttpTarget;
  readonly method: HttpMethod;
  readonly path: PathTemplate;
  readonly query: readonly NamedTemplate[];
  /** Names lowercased. */
  readonly headers: readonly NamedTemplate[];
  readonly body: BodyTemplate | undefined;
}

/** A broad HTTP tool: the agent picks method, path (among patterns), query and JSON body. */
export interface HttpRequestAction {
  readonly kind: 'http_request';
  readonly target: HttpTarget;
  readonly methods: readonly HttpMethod[];
  readonly paths: readonly PathPattern[];
  /** Operator-fixed headers, names lowercased. */
  readonly headers: readonly (readonly [string, string])[];
}

export type ArgvElement =
  | { readonly kind: 'literal'; readonly value: string }
  | { readonly kind: 'param'; readonly param: string }
  | { readonly kind: 'splice'; readonly param: string }
  | { readonly kind: 'text'; readonly template: StringTemplate };

export interface SshAction {
  readonly kind: 'ssh';
  readonly target: SshTarget;
  /** argv[0] is a literal or a `{param}` whose schema is a closed string enum. */
  readonly argv: readonly ArgvElement[];
  readonly programs: readonly string[];
}

export type Action = HttpAction | HttpRequestAction | SshAction;

/** How calls planned against the previous revision are treated once this one is current. */
export type PreviousPolicy = { readonly policy: 'pin' } | { readonly policy: 'reject' } | AdapterPolicy;

/**
 * A declared transformation of calls planned against the previous revision.
 * `adapt` carries calls that arrive planned against it; `migrate` does that
 * too and also carries a call already waiting for approval when this revision
 * is accepted (its approval is asked again for the new arguments).
 */
export interface AdapterPolicy {
  readonly policy: 'adapt' | 'migrate';
  /** old name → new name, applied first. */
  readonly renames: readonly (readonly [string, string])[];
  /** field (new name) → old value → new value, applied second. */
  readonly mappings: readonly (readonly [string, readonly (readonly [JsonPrimitive, JsonPrimitive])[]])[];
  /** field → constant, set when absent, applied last. */
  readonly defaults: readonly (readonly [string, JsonValue])[];
  /** How results of the newer revision are given back in the older revision's shape; absent = unchanged. */
  readonly output: OutputAdapter | undefined;
}

/**
 * A declared transformation of a result of the newer revision into the shape
 * of the older one, applied in this order: `unwrap` (take the value of that
 * one top-level field), `renames` (new name → old name), `mappings` (old
 * field name → new value → old value), `defaults` (old field → constant, set
 * when absent), `wrap` (put the whole under that field). Top-level only; a
 * value is never overwritten and never dropped without saying so.
 */
export interface OutputAdapter {
  readonly unwrap: string | undefined;
  readonly renames: readonly (readonly [string, string])[];
  readonly mappings: readonly (readonly [string, readonly (readonly [JsonPrimitive, JsonPrimitive])[]])[];
  readonly defaults: readonly (readonly [string, JsonValue])[];
  readonly wrap: string | undefined;
}

export function isAdapter(p: PreviousPolicy | undefined): p is AdapterPolicy {
  return p?.policy === 'adapt' || p?.policy === 'migrate';
}

export type PolicyName = PreviousPolicy['policy'];

export interface Revision {
  readonly tool: string;
  readonly revision: number;
  readonly input: CompiledSchema;
  readonly output: CompiledSchema | undefined;
  readonly action: Action;
  /** Absent: calls from the previous revision are validated against this one as they are. */
  readonly previous: PreviousPolicy | undefined;
  /** ISO date (YYYY-MM-DD) announced as the end of this revision; informational. */
  readonly deprecated: string | undefined;
  /** The tool that replaces this one, declared with `deprecated: { date, replacement }`; informational. */
  readonly deprecationReplacement: string | undefined;
  readonly retired: { readonly replacement: string | undefined } | undefined;
  /** Declared change of meaning relative to the previous revision. */
  readonly semanticChange: string | undefined;
  /**
   * Canary (only on the current revision, with `previous: pin`): this share of
   * sessions is shown this revision; the others are shown the previous one
   * and stay pinned to it (contracts/calls/canary.ts).
   */
  readonly canary: { readonly sessionsPercent: number } | undefined;
}

export interface Tool {
  readonly name: string;
  readonly description: string;
  readonly effect: Effect;
  readonly approval: ApprovalMode;
  /**
   * `approval.presence`, resolved: `required` when declared so, or by default for a destructive
   * tool that needs approval; `none` otherwise or when declared `presence: none`.
   */
  readonly presence: PresenceMode;
  /** Strictly increasing revision numbers; never empty. */
  readonly revisions: readonly Revision[];
  /** The last revision. */
  readonly current: Revision;
  /** The tool's own limits; absent fields fall back to its target's (contracts/catalog/limits.ts). */
  readonly limits?: Limits;
  /** `agent_users`: the OS users who may call it (docs/agent-users.md); absent: every user that reaches the agent socket. */
  readonly agentUsers?: readonly string[];
}

/** An SSH endpoint a revision can reach (authority/authority.ts). */
export interface SshEndpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
}

/** Everything a revision can reach, and its effect (authority/authority.ts). */
export interface Authority {
  readonly effect: Effect;
  readonly credentials: readonly string[];
  /** `scheme://host:port`, port always explicit. */
  readonly origins: readonly string[];
  readonly methods: readonly string[];
  /** Path shapes: placeholders as `{}`, a trailing multi-segment wildcard as `{...}`. */
  readonly paths: readonly string[];
  /**
   * Fixed request-meaning overrides, e.g. `header x-http-method-override: DELETE`
   * or `query _method=PUT` (src/rules/http-headers.ts, query-names.ts).
   */
  readonly requestMeaning: readonly string[];
  readonly privateNetwork: 'allowed' | 'refused';
  readonly ssh: readonly SshEndpoint[];
  readonly programs: readonly string[];
  /** argv shapes: literals (braces doubled), `{}` one argument, `{...}` several. */
  readonly commands: readonly (readonly string[])[];
}

/** A constraint of a pre-approval rule on one normalized argument (preapproval.ts). */
export type ArgConstraint =
  | { readonly kind: 'equal'; readonly value: JsonValue }
  | { readonly kind: 'one_of'; readonly values: readonly JsonValue[] }
  | { readonly kind: 'pattern'; readonly pattern: BoundedPattern }
  | { readonly kind: 'max'; readonly value: number };

/** A pre-approval rule (`preapprovals:`): what an unattended daemon may approve (preapproval.ts). */
export interface PreapprovalRule {
  readonly name: string;
  readonly tool: string;
  /**
   * The revision of `tool` whose authority the rule was accepted for
   * (`revision:`, the tool's first revision when absent): a call of a revision
   * that reaches beyond it is not pre-approved (preapproval.ts, ruleOutgrown).
   */
  readonly revision: number;
  /** argument name → every constraint on it (all must hold). */
  readonly arguments: readonly (readonly [string, readonly ArgConstraint[]])[];
  /** Calls this rule may approve per daemon run. */
  readonly budget: number;
  /** Present when the rule names a gateway call (`gateway:` and `action:`); `tool` is then that call's tool name. */
  readonly gateway?: GatewayRuleBinding;
}

/** The gateway calls an SSH gateway tool stands for: `ssh-gateway:<target>:<action>`. */
export type GatewayAction = 'git-push' | 'git-fetch' | 'exec';

/**
 * What a gateway rule was accepted for (gateway/gateway-rules.ts): its target
 * and action, the repositories (git) or commands (exec) it names, and the
 * authority those had on the target when the rule was built.
 */
export interface GatewayRuleBinding {
  readonly target: string;
  readonly action: GatewayAction;
  readonly reach: readonly string[];
  readonly authority: Authority;
}

export interface Catalog {
  readonly fileName: string;
  readonly targets: ReadonlyMap<string, Target>;
  readonly tools: ReadonlyMap<string, Tool>;
  /** Pre-approval rules for unattended runs (preapproval.ts), by rule name. */
  readonly preapprovals: ReadonlyMap<string, PreapprovalRule>;
}
