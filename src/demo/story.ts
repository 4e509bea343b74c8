/**
 * The story `postern demo --agent` tells: a read, a call
 * that needs approval, an idempotent replay, a session grant, a catalog
 * change under the live session (`tools/list_changed`), a stale call adapted
 * from revision 1 to 2, a stale call rejected before any effect, and the
 * agent refreshing its tools. Each step acts through the real agent (MCP over
 * stdio) and the operator seam, checks what the agent got AND what the
 * targets' request log recorded, and narrates itself in one or two lines.
 *
 * Invariant: a step that does not behave as the story says fails the whole
 * run with DEMO_FAILED naming the step; nothing is papered over.
 */
import { randomBytes } from 'node:crypto';
import { PosternError } from '../rules/errors.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import type { AgentResult, DemoAgent } from './agent.js';
import type { DemoOperator } from './operator.js';
import type { LoggedRequest } from './request-log.js';
import type { DemoWorld } from './world.js';

export interface StoryStep {
  readonly n: number;
  readonly label: string;
  readonly lines: readonly string[];
}

interface StoryParts {
  readonly world: DemoWorld;
  readonly agent: DemoAgent;
  readonly operator: DemoOperator;
  /** Called as each step completes, so the narration keeps pace with the run. */
  readonly narrate: (step: StoryStep) => void;
  /** How long the drift step waits for `tools/list_changed` (default a minute). */
  readonly listChangedWaitMs?: number;
}

const LIST_CHANGED_WAIT_MS = 60_000;
const t = (v: unknown, max = 120): string => sanitizeForTerminal(typeof v === 'string' ? v : JSON.stringify(v) ?? String(v), max);
const newKey = (): string => `demo-${randomBytes(6).toString('hex')}`;

class StepFailed extends PosternError {
  constructor(n: number, label: string, what: string) {
    super('DEMO_FAILED', `step ${n} (${label}): ${what}`);
  }
}

/** The one-line form of a request-log entry (also used by the final listing). */
export function describeRequest(r: LoggedRequest): string {
  switch (r.target) {
    case 'http':
      return `#${r.seq} http ${r.method} ${t(r.path, 60)}${r.body === '' ? '' : ` ${t(r.body, 80)}`}${r.idempotencyKey === null ? '' : ` (Idempotency-Key ${t(r.idempotencyKey, 40)})`}, token ${r.auth}`;
    case 'ssh':
      return `#${r.seq} ssh  ${t(r.user, 20)}@preview ${t(r.argv.join(' '), 100)}, key ${r.auth}`;
  }
}

type Check = (ok: boolean, what: string) => void;

/** What the steps share: the parts, what the agent listed first, and the ticket the approval step made. */
interface Scene {
  readonly world: DemoWorld;
  readonly agent: DemoAgent;
  readonly operator: DemoOperator;
  readonly log: DemoWorld['log'];
  readonly listChangedWaitMs: number;
  readonly names: readonly string[];
  readonly ticketArgs: { readonly title: string; readonly idempotency_key: string };
  ticketId: string;
}

const sent = (s: Scene, from: number): LoggedRequest[] => s.log.since(from);
const delta = (s: Scene, from: number): string => {
  const got = sent(s, from);
  return got.length === 0 ? 'request log: nothing new' : `request log: +${got.map(describeRequest).join('; +')}`;
};
const ok = (r: AgentResult): boolean => !r.isError;
const errorOf = (r: AgentResult): string => `${t(r.structured['error_code'] ?? 'no code')}: ${t(r.text, 160)}`;

/** Step `read`. */
async function readStep(s: Scene, check: Check): Promise<string[]> {
  check(s.names.includes('list_tickets r1') && s.names.includes('create_ticket r1') && s.names.includes('deploy_preview r1'), `the agent listed ${s.names.join(', ')}`);
  const before = s.log.length;
  const r = await s.agent.call('list_tickets', {});
  check(ok(r), errorOf(r));
  const body = r.structured['body'] as { tickets?: unknown[]; debug?: { authorization?: unknown } } | undefined;
  const echoed = body?.debug?.authorization;
  check(r.structured['status'] === 200 && Array.isArray(body?.tickets), `unexpected result ${t(r.structured, 200)}`);
  check(typeof echoed === 'string' && echoed.includes('[REDACTED:tracker-token]'), 'the echoed credential was not redacted');
  const got = sent(s, before);
  check(got.length === 1 && got[0]?.target === 'http' && got[0].method === 'GET' && got[0].auth === 'ok', `the tracker saw ${got.length} requests`);
  return [
    `The agent lists ${s.names.join(', ')}. list_tickets (read, no approval) → 200, ${body?.tickets?.length ?? 0} tickets.`,
    `The tracker echoed its Authorization header: the agent sees "${t(echoed)}". ${delta(s, before)}`,
  ];
}

/** Step `approval`. */
async function approvalStep(s: Scene, check: Check): Promise<string[]> {
  const before = s.log.length;
  const pending = s.agent.call('create_ticket', s.ticketArgs);
  const { card, verdict } = await s.operator.decide({ tool: 'create_ticket', suggest: 'once' });
  const r = await pending;
  check(ok(r), errorOf(r));
  check(card.target.kind === 'http' && card.target.method === 'POST' && card.credential === 'tracker-token', 'the approval card did not show the request');
  const ticket = (r.structured['body'] as { ticket?: { id?: unknown } } | undefined)?.ticket;
  s.ticketId = typeof ticket?.id === 'string' ? ticket.id : '';
  const got = sent(s, before);
  check(r.structured['status'] === 201 && s.ticketId !== '', `unexpected result ${t(r.structured, 200)}`);
  check(got.length === 1 && got[0]?.target === 'http' && got[0].method === 'POST' && got[0].idempotencyKey === s.ticketArgs.idempotency_key, 'the tracker did not get exactly one POST with the idempotency key');
  const where = card.target.kind === 'http' ? `${card.target.method} ${card.target.origin}${card.target.path}` : '';
  return [
    `create_ticket (write, per-call) waits; the operator's card: ${t(where)}, credential ${t(card.credential)} → approved ${verdict.verdict === 'approve' ? verdict.scope : 'no'}.`,
    `201, ticket ${t(s.ticketId)}. ${delta(s, before)}`,
  ];
}

/** Step `replay`. */
async function replayStep(s: Scene, check: Check): Promise<string[]> {
  const before = s.log.length;
  const r = await s.agent.call('create_ticket', s.ticketArgs);
  check(ok(r) && r.structured['replayed'] === true, `the same key did not replay: ${t(r.structured, 200)}`);
  const posts = s.log.all().filter((e) => e.target === 'http' && e.method === 'POST');
  check(sent(s, before).length === 0 && posts.length === 1, `the tracker got ${posts.length} POST requests`);
  return [
    `Same idempotency_key, same arguments → the stored result (replayed: true, ${t(s.ticketId)}); no approval, nothing run again.`,
    `${delta(s, before)}: ONE POST /tickets in all.`,
  ];
}

/** Step `session grant`. */
async function sessionGrantStep(s: Scene, check: Check): Promise<string[]> {
  const before = s.log.length;
  const pending = s.agent.call('deploy_preview', { branch: 'fix-login', idempotency_key: newKey() });
  const { card, verdict } = await s.operator.decide({ tool: 'deploy_preview', suggest: 'session' });
  const r = await pending;
  check(ok(r), errorOf(r));
  check(card.scope_allowed === 'session' && verdict.verdict === 'approve' && verdict.scope === 'session', 'a session grant was not offered for revision 1');
  const got = sent(s, before);
  check(got.length === 1 && got[0]?.target === 'ssh' && got[0].argv.join(' ') === '/srv/deploy.sh --branch=fix-login us-east-preview', 'the host did not run the r1 command');
  return [
    `deploy_preview r1 {branch: fix-login} over SSH, host key pinned; the operator grants the session → exit ${t(r.structured['exit_code'])}.`,
    delta(s, before),
  ];
}

/** Step `drift`. */
async function driftStep(s: Scene, check: Check): Promise<string[]> {
  const told = s.agent.nextListChanged();
  const changes = await s.world.accept(2);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), s.listChangedWaitMs)));
  const first = await Promise.race([told.then(() => 'told' as const), timedOut]);
  clearTimeout(timer);
  check(first === 'told', 'the agent was not told notifications/tools/list_changed');
  const links = new Map<string, { classes: Set<string>; policy: string }>();
  for (const c of changes) {
    if (c.from === null || c.to === null) continue;
    const k = `${c.tool} r${c.from}→r${c.to}`;
    const l = links.get(k) ?? { classes: new Set<string>(), policy: c.policy ?? 'none' };
    l.classes.add(c.class);
    links.set(k, l);
  }
  const text = [...links].map(([k, l]) => `${k}: ${[...l.classes].join(', ')} → ${l.policy}`);
  check(links.get('deploy_preview r1→r2')?.policy === 'adapt' && links.get('create_ticket r1→r2')?.policy === 'reject', `catalog #2 was classified as ${text.join('; ')}`);
  return [
    ...text.map((l, i) => `${i === 0 ? 'Catalog #2 accepted under the live session. ' : ''}${t(l, 200)}`),
    'The agent gets notifications/tools/list_changed and, like any long-running agent, keeps its r1 plans.',
  ];
}

/** Step `adapted`. */
async function adaptedStep(s: Scene, check: Check): Promise<string[]> {
  const before = s.log.length;
  const pending = s.agent.call('deploy_preview', { branch: 'fix-signup', idempotency_key: newKey() }, 1);
  const { card, verdict } = await s.operator.decide({ tool: 'deploy_preview', suggest: 'session' });
  const r = await pending;
  check(ok(r), errorOf(r));
  const normalized = card.normalized_arguments as { region?: unknown } | null;
  check(card.revision === 2 && card.revision_seen === 1 && card.adapter !== null && normalized?.region === 'us-east-preview', 'the card did not show the r1 call adapted to r2');
  check(card.scope_allowed === 'per-call' && card.widening.length > 0 && verdict.verdict === 'approve' && verdict.scope === 'once', 'the widening revision did not require a per-call approval');
  check(r.structured['result_revision'] === 2, `the result is of revision ${t(r.structured['result_revision'])}`);
  const got = sent(s, before);
  check(got.length === 1 && got[0]?.target === 'ssh' && got[0].argv.join(' ') === '/srv/deploy.sh --branch=fix-signup us-east-preview', 'the host did not run the adapted command');
  return [
    `deploy_preview planned against r1 {branch: fix-signup} → adapted to r2 (${t(card.adapter)}).`,
    `r2 widens authority (${t(card.widening.join('; '), 80)}): the session grant does not apply; approved once.`,
    `${delta(s, before)}: what r1 would have run.`,
  ];
}

/** Step `rejected`. */
async function rejectedStep(s: Scene, check: Check): Promise<string[]> {
  const before = s.log.length;
  const r = await s.agent.call('create_ticket', { title: 'Stale plan from r1', idempotency_key: newKey() }, 1);
  check(r.isError && r.structured['error_code'] === 'CONTRACT_STALE', `expected CONTRACT_STALE, got ${errorOf(r)}`);
  check(r.structured['side_effect_started'] === false && r.structured['current_revision'] === 2, 'the rejection did not say that nothing started');
  check(s.operator.undecided().length === 0, 'an approval was asked for a rejected call');
  const posts = s.log.all().filter((e) => e.target === 'http' && e.method === 'POST');
  check(sent(s, before).length === 0 && posts.length === 1, 'the tracker received a request for a rejected call');
  return [
    `create_ticket planned against r1 (no team) → ${t(r.structured['error_code'])}, side_effect_started: false, current_revision ${t(r.structured['current_revision'])}.`,
    `No approval was asked; ${delta(s, before)}: still ONE POST /tickets in all.`,
  ];
}

/** Step `refresh`. */
async function refreshStep(s: Scene, check: Check): Promise<string[]> {
  const now = await s.agent.listTools();
  const deploy = now.find((x) => x.name === 'deploy_preview');
  const create = now.find((x) => x.name === 'create_ticket');
  check(deploy?.revision === 2 && create?.revision === 2, 'the refreshed list does not show revision 2');
  return [
    `The agent re-lists: deploy_preview r2 needs ${t(deploy?.required.join(', '))}; create_ticket r2 needs ${t(create?.required.join(', '))}.`,
  ];
}

const STEPS: readonly (readonly [label: string, run: (s: Scene, check: Check) => Promise<string[]>])[] = [
  ['read', readStep],
  ['approval', approvalStep],
  ['replay', replayStep],
  ['session grant', sessionGrantStep],
  ['drift', driftStep],
  ['adapted', adaptedStep],
  ['rejected', rejectedStep],
  ['refresh', refreshStep],
];

/** Runs the steps in order, narrating each as it completes; the first that does not behave fails the run. */
export async function runStory(parts: StoryParts): Promise<StoryStep[]> {
  const tools = await parts.agent.listTools();
  const scene: Scene = {
    world: parts.world,
    agent: parts.agent,
    operator: parts.operator,
    log: parts.world.log,
    listChangedWaitMs: parts.listChangedWaitMs ?? LIST_CHANGED_WAIT_MS,
    names: tools.map((x) => `${x.name}${x.revision === null ? '' : ` r${x.revision}`}`),
    ticketArgs: { title: 'Login page times out', idempotency_key: newKey() },
    ticketId: '',
  };
  const steps: StoryStep[] = [];
  for (const [i, [label, run]] of STEPS.entries()) {
    const n = i + 1;
    const lines = await run(scene, (good, what) => {
      if (!good) throw new StepFailed(n, label, what);
    });
    const step = { n, label, lines };
    steps.push(step);
    parts.narrate(step);
  }
  return steps;
}
