/**
 * What a call stage returns: go on with the call as it now stands, answer
 * the agent now (a replay, a status), or refuse (journaled as a rejection,
 * or as the outcome of a recorded intent, by the orchestrator). A helper a
 * stage calls may throw a PosternError instead of returning a refusal (the
 * pure planning rules do): the orchestrator takes it as the stage's refusal.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { CallState } from './call-state.js';

export type Step =
  | { readonly kind: 'next'; readonly call: CallState }
  | { readonly kind: 'answer'; readonly result: CallToolResult }
  /** `call`: the call as the refusing stage left it, when it holds something to release. */
  | { readonly kind: 'refuse'; readonly error: unknown; readonly call?: CallState };

export type Stage = (call: CallState) => Step | Promise<Step>;

export const next = (call: CallState): Step => ({ kind: 'next', call });
export const answer = (result: CallToolResult): Step => ({ kind: 'answer', result });
export const refuse = (error: unknown, call?: CallState): Step => (call === undefined ? { kind: 'refuse', error } : { kind: 'refuse', error, call });
