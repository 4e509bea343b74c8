/**
 * Feeds the reducer from an OperatorClient: one subscription per mount,
 * cancelled through its AbortSignal on unmount. Events that arrive before the
 * snapshot are held and applied after it (the reducer drops those the
 * snapshot already covers). A closed connection or a failed subscription
 * becomes state, never an exception in the render tree.
 */
import { useEffect, useReducer } from 'react';
import type { EventEnvelope, OperatorClient } from './contract.js';
import { initialState, reduce, type OperatorState } from './state.js';

function reasonOf(e: unknown): string {
  if (typeof e === 'object' && e !== null && 'message' in e && typeof e.message === 'string') return e.message;
  return 'the connection to the daemon closed';
}

export function useOperatorState(client: OperatorClient): OperatorState {
  const [state, dispatch] = useReducer(reduce, initialState);
  useEffect(() => {
    const ac = new AbortController();
    let early: EventEnvelope[] | null = [];
    const onEvent = (envelope: EventEnvelope): void => {
      if (early !== null) early.push(envelope);
      else dispatch({ type: 'event', envelope });
    };
    client.subscribe(onEvent, { signal: ac.signal }).then(
      (snapshot) => {
        if (ac.signal.aborted) return;
        dispatch({ type: 'snapshot', snapshot });
        const held = early ?? [];
        early = null;
        for (const envelope of held) dispatch({ type: 'event', envelope });
      },
      (e: unknown) => {
        if (!ac.signal.aborted) dispatch({ type: 'closed', reason: reasonOf(e) });
      },
    );
    client.closed.then(
      (e) => {
        if (!ac.signal.aborted) dispatch({ type: 'closed', reason: e === null ? 'the connection to the daemon closed' : reasonOf(e) });
      },
      (e: unknown) => {
        if (!ac.signal.aborted) dispatch({ type: 'closed', reason: reasonOf(e) });
      },
    );
    return () => ac.abort();
  }, [client]);
  return state;
}
