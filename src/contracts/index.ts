/**
 * The contracts core: catalog parsing, contract revisions, authority, change
 * classification and the release gate. Everything here is pure — no files, no
 * sockets, no clock unless passed in — so the CLI, the daemon and the TUI can
 * share one implementation of every decision. Typical uses:
 *
 *   catalog check   parseCatalog(text, file, creds) → releaseGate(old, cand, journal)
 *                   → renderGateReport(report) | gateReportJson(report); exit 1 unless report.ok
 *   catalog show    renderCatalogSummary(catalog) | catalogSummaryJson(catalog, catalogDigest(text))
 *   catalog accept  judgeAcceptance(facts) → checkCatalogCredentials(catalog, vault metadata)
 *                   → catalogDigest → acceptanceRecord → acceptanceMac(key, record)
 *   daemon reload   judgeSuccessor(key, current, record, history)
 *   tools/list      advertiseCatalog(catalog)
 *   tools/call      splitIdempotencyKey → resolveContract(tool, seenRevision) → prepareCall(decision, raw)
 *                   → resolveAction(prepared.revision, prepared.normalized) → actionDigest(action)
 *   approvals       authorityOf → authorityDigest / widensAuthority(granted, current)
 */
export type {
  Action, ApprovalMode, Catalog, CompiledSchema, Effect, HttpAction, HttpAuth, HttpMethod, HttpRequestAction, HttpTarget,
  JsonObject, JsonPrimitive, JsonValue, OutputAdapter, PolicyName, PreviousPolicy, Revision, SshAction, SshTarget, Target, Tool, HostKey,
} from './types.js';
export { ApprovalModes, Effects, HttpMethods, LimitNames, type LimitName, type Limits } from './types.js';
export { limitsOf, limitChanges, unlimited, type LimitChanges } from './catalog/limits.js';

export { canonicalJson, canonicalDigest, sha256Hex } from '../rules/canonical.js';
export { parseCatalog } from './catalog/parse-catalog.js';
export { checkCatalogCredentials, credentialMisfits, type CredentialMisfit } from './catalog/credential-check.js';
export { toolsUsingCredential } from './catalog/credential-use.js';
export { MAX_CATALOG_BYTES, catalogLineOf } from './catalog/parse-yaml.js';
export { SchemaLimits } from './schema/schema-node.js';
export { normalizeOrigin, normalizeSshHost, classifyHost, type NormalizedOrigin, type HostClass } from './catalog/origin.js';

export { validateArguments, describeIssues, resultIssues, type FieldIssue, type Validation } from './schema/validate.js';
export { adaptArguments, type AdaptResult } from './calls/adapt.js';
export { applyOutputAdapter, carryResultBack, outputLink, adaptedOutputNode, type OutputHop, type OutputLink, type OutputStep } from './calls/output-adapt.js';
export { resolveContract, prepareCall, RejectReasons, type ContractDecision, type PreparedCall, type Rejection, type RejectReason, type Link } from './calls/contract.js';
export { resolveAction, actionDigest, type ResolveOptions } from './calls/resolve-action.js';
export { shellQuote, type ResolvedAction, type ResolvedHttp, type ResolvedSsh, type ResolveResult } from './calls/resolved.js';

export { authorityOf, authorityDigest, widensAuthority, type Authority, type SshEndpoint, type Widening } from './authority/authority.js';

export { ChangeClasses, type Change, type ChangeAspect, type ChangeClass, type ChangeReason } from './change-vocabulary.js';
export { classifyRevisionChange } from './changes/classify-revision.js';
export { classifyCatalogChange } from './changes/classify-catalog.js';
export { describeRule, ruleCovers, ruleLoosening, ruleOutgrown, type ArgConstraint, type PreapprovalRule, type RuleVerdict } from './authority/preapproval.js';
export { buildPreapprovals, MAX_RULE_BUDGET } from './catalog/build-preapprovals.js';
export { compileBoundedPattern, MAX_PATTERN_LENGTH, MAX_REPEAT, MAX_STATES, type BoundedPattern, type PatternCompile } from './schema/bounded-pattern.js';
export { releaseGate, gateRuleFor, GateRules, type GateFailure, type GateReport, type GateRule, type HistoryRecord, type HistoricalFailure } from './changes/release-gate.js';
export { renderGateReport, gateReportJson, renderCatalogSummary, catalogSummaryJson, summarizeCatalog, GATE_JSON_FORMAT, CATALOG_JSON_FORMAT, type ToolSummary } from './changes/render.js';

export {
  catalogDigest, acceptanceRecord, acceptanceMac, verifyAcceptance, judgeAcceptance, judgeSuccessor, verifyHistoryChain, sequenceOf, Alarms,
  type AcceptanceRecord, type LegacyAcceptanceRecord, type AnyAcceptanceRecord, type AcceptanceMark, type AcceptanceCheck, type AcceptanceFacts,
  type Alarm, type CatalogState, type CurrentAcceptance, type HistoryCheck, type SignedRecord, type StoredRecord, type Succession,
} from './catalog/acceptance.js';
export { withHostKeyPin } from './catalog/host-key-pin.js';
export { advertiseTool, advertiseCatalog, splitIdempotencyKey, needsIdempotencyKey, IDEMPOTENCY_KEY, type AdvertisedTool, type KeySplit } from './calls/advertise.js';
export { deprecationOf, deprecationsOf, type DeprecationNotice, type DeprecationReplacement } from './changes/deprecation.js';
export { canaryBucket, controlRevision, inCanary, sessionPlan, shownRevision, type SessionPlan } from './calls/canary.js';
