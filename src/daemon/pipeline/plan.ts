/**
 * The plan's shape, where the SSH gateway (src/daemon/ssh-gateway/plan.ts)
 * still imports it from; it is the call state's (stages/call-state.ts), and
 * the planning is stages/planning/. This file goes when the gateway imports
 * the call state's.
 */
export type { CallPlan } from './stages/call-state.js';
