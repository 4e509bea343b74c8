/**
 * Feeds the operator state's reducer (state.ts) from an OperatorClient: one
 * subscription per mount, cancelled through its AbortSignal on unmount, each
 * snapshot, event and close handed to `onAction` as it comes. Events that
 * arrive before the snapshot are held and handed on after it (the reducer
 * drops those the snapshot already covers). A closed connection or a failed
 * subscription becomes an action, never an exception in the render tree.
 */
import { useEffect, useRef } from 'react';
import type { EventEnvelope, OperatorClient } from './contract.js';
import type { StateAction } from './state.js';

function reasonOf(e: unknown): string {
  if (typeof e === 'object' && e !== null && 'message' in e && typeof e.message === 'string') return e.message;
  return 'the connection to the daemon closed';
}

export function useOperatorFeed(client: OperatorClient, onAction: (a: StateAction) => void): void {
  const handler = useRef(onAction);
  handler.current = onAction;
  useEffect(() => {
    const ac = new AbortController();
    const dispatch = (a: StateAction): void => {
      if (!ac.signal.aborted) handler.current(a);
    };
    let early: EventEnvelope[] | null = [];
    const onEvent = (envelope: EventEnvelope): void => {
      if (early !== null) early.push(envelope);
      else dispatch({ type: 'event', envelope });
    };
    client.subscribe(onEvent, { signal: ac.signal }).then(
      (snapshot) => {
        dispatch({ type: 'snapshot', snapshot });
        const held = early ?? [];
        early = null;
        for (const envelope of held) dispatch({ type: 'event', envelope });
      },
      (e: unknown) => dispatch({ type: 'closed', reason: reasonOf(e) }),
    );
    client.closed.then(
      (e) => dispatch({ type: 'closed', reason: e === null ? 'the connection to the daemon closed' : reasonOf(e) }),
      (e: unknown) => dispatch({ type: 'closed', reason: reasonOf(e) }),
    );
    return () => ac.abort();
  }, [client]);
}
