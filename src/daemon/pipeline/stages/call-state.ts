/**
 * What one call has become, carried from stage to stage (index.ts): the
 * context it runs in, then each stage's contribution. A stage returns a new
 * value with its field set (never changes the one it was given), or answers,
 * or refuses (step.ts). Fields a stage sets are absent before it; `need`
 * reads one a later stage depends on (a missing one is a stage-order defect).
 */
import type { Authority, Catalog, ContractDecision, JsonObject, Rejection, ResolvedAction, Revision, Tool } from '../../../contracts/index.js';
import type { LimitUsage } from '../../../protocol/limit-usage.js';
import type { Charge } from '../../services/limits.js';
import { PosternError } from '../../../rules/errors.js';
import type { Redactor } from '../../../redaction/index.js';
import type { Credential, UnlockedVault } from '../../../vault/index.js';
import type { CatalogSnapshot } from '../../services/state.js';
import type { CallRequest, Services, SessionInfo } from '../context.js';
import type { HttpResult } from '../../../executors/http/index.js';
import type { SshResult } from '../../../executors/ssh/index.js';
import type { Trail } from '../trail.js';

/** What the executor returned for the call's action. */
export type ExecResult = { readonly kind: 'http'; readonly result: HttpResult } | { readonly kind: 'ssh'; readonly result: SshResult };

/** The plan of the call against one catalog snapshot (made by planning/plan.ts, and again by the re-checks). */
export interface CallPlan {
  readonly tool: Tool;
  /** The session the call is planned for (what it is served decides what it may be planned against). */
  readonly session: string;
  /** The revision the call was planned against; undefined when that is the current one. */
  readonly planned: number | undefined;
  readonly decision: Exclude<ContractDecision, Rejection>;
  /** The revision that runs. */
  readonly revision: Revision;
  readonly normalized: JsonObject;
  /** Adapter steps applied, for the journal and the approval card. */
  readonly adapted: readonly string[];
  readonly action: ResolvedAction;
  readonly authority: Authority;
  /** The authority of the planned revision, when it is not the one that runs. */
  readonly plannedAuthority: Authority | undefined;
  readonly argsDigest: string;
  readonly callDigest: string;
}

/** The arguments as admitted: bounded, secret-free, the key split off. */
export interface Admitted {
  readonly tool: Tool;
  /** The arguments without `idempotency_key`. */
  readonly callArgs: unknown;
  readonly key: string | undefined;
}

/** The credential the call runs with: its own copy, and the vault it was taken from. */
interface Held {
  readonly vault: UnlockedVault;
  readonly credential: Credential;
}

export interface CallState {
  readonly svc: Services;
  readonly session: SessionInfo;
  readonly req: CallRequest;
  readonly trail: Trail;
  /** The catalog snapshot the call was admitted under. */
  readonly snapshot: CatalogSnapshot;
  /** Undone in reverse order when the call ends, however it ends (a key reservation, a charge, a credential copy). */
  readonly releases: readonly (() => void)[];
  /** The redactor of the vault at admission (used for the result when the vault has locked since). */
  readonly redactor?: Redactor;
  readonly admitted?: Admitted;
  readonly plan?: CallPlan;
  /** The catalog the current plan was made against: a re-check is needed only once another is in use. */
  readonly planCatalog?: Catalog;
  /** The limits' usage the call saw before its approval (shown on the card). */
  readonly usage?: readonly LimitUsage[];
  /** The limits' charge, when the tool has limits (refunded if no intent is journaled). */
  readonly charge?: Charge;
  readonly held?: Held;
  readonly exec?: { readonly result: ExecResult; readonly startedMs: number };
}

/** A field an earlier stage sets. */
export function need<K extends keyof CallState>(call: CallState, field: K): NonNullable<CallState[K]> {
  const v = call[field];
  if (v === undefined || v === null) throw new PosternError('INTERNAL', `call stage order: "${String(field)}" is not set yet; nothing further was run`);
  return v;
}

/** `call` with `release` undone when the call ends. */
export function holding(call: CallState, release: () => void): CallState {
  return { ...call, releases: [...call.releases, release] };
}
