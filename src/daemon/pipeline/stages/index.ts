/**
 * The call as stages over one value (call-state.ts), in the order of DESIGN §6.
 * Each stage is a small function in its own module that goes on with the
 * call as it now stands, answers, or refuses (step.ts); `runStages` only runs
 * them in order. A feature is a stage or a field of the call, never a branch
 * in the orchestrator.
 *
 * Invariants the order carries: nothing is planned before the arguments are
 * admitted; no operator is asked for a call that cannot run (no credential,
 * over a limit); after the approval's wait the call runs only under a plan
 * the catalog in use still makes the same way, and the last such check
 * (`stillSame` before the charge) is synchronous with the charge and the
 * start of the intent; nothing leaves the machine before the intent is
 * committed, and a catalog accepted while that commit waited still stops it.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { refusedCall } from '../refusal.js';
import { admission } from './admission/index.js';
import { approval } from './approval/index.js';
import type { CallState } from './call-state.js';
import { credentialPresent, takeCredential } from './credential.js';
import { execution } from './execution/index.js';
import { intent } from './intent.js';
import { idempotencyKey } from './key/index.js';
import { limitsCharge, limitsCheck } from './limits.js';
import { outcome } from './outcome/index.js';
import { planning } from './planning/index.js';
import { stillSame } from './recheck/index.js';
import type { Stage } from './step.js';

export const CALL_STAGES: readonly (readonly [name: string, stage: Stage])[] = [
  ['admission', admission],
  ['planning', planning],
  ['idempotency key', idempotencyKey],
  ['credential present', credentialPresent],
  ['limits check', limitsCheck],
  ['approval', approval],
  ['take credential', takeCredential],
  ['re-check before the charge', stillSame],
  ['limits charge', limitsCharge],
  ['intent', intent],
  ['re-check after the intent', stillSame],
  ['execution', execution],
  ['outcome', outcome],
];

/**
 * Runs the stages in order until one answers or refuses; a refusal (or a
 * throw) is journaled by the trail and answered as a typed error. Whatever
 * the call holds is released when it ends. Never throws.
 */
export async function runStages(first: CallState, stages: readonly (readonly [string, Stage])[] = CALL_STAGES): Promise<CallToolResult> {
  let call = first;
  try {
    for (const [, stage] of stages) {
      const step = await stage(call);
      if (step.kind === 'answer') return step.result;
      if (step.kind === 'refuse') {
        if (step.call !== undefined) call = step.call;
        return await refusedCall(call.svc, call.trail, step.error);
      }
      call = step.call;
    }
    return await refusedCall(call.svc, call.trail, new Error('no call stage answered'));
  } catch (e) {
    return await refusedCall(call.svc, call.trail, e);
  } finally {
    for (const release of [...call.releases].reverse()) release();
  }
}
