/**
 * Every key of the TUI, for the `?` help screen. The key handler in app.tsx
 * and the key-help bars of the views follow this table; an observer's help
 * leaves out every key that decides or changes anything.
 */
export interface KeyDoc {
  readonly keys: string;
  readonly what: string;
  /** Keys that change something on the daemon; never offered to an observer. */
  readonly decides?: true;
}

export const KEY_SECTIONS: ReadonlyArray<{ readonly title: string; readonly keys: readonly KeyDoc[] }> = [
  {
    title: 'Everywhere',
    keys: [
      { keys: '1-5, Tab, Shift-Tab', what: 'switch view (approvals, activity, sessions, grants, catalog)' },
      { keys: 'j/k, ↓/↑', what: 'move down/up' },
      { keys: '/', what: 'filter the list (Enter applies, Esc cancels, empty clears)' },
      { keys: '?', what: 'this help' },
      { keys: 'q, Esc', what: 'back; quit from the top (asks when calls are waiting)' },
      { keys: 'Ctrl-C', what: 'quit (asks when calls are waiting)' },
    ],
  },
  {
    title: 'Approvals',
    keys: [
      { keys: 'a', what: 'approve this call once', decides: true },
      { keys: 's', what: 'approve for the rest of this session (not for widening calls or cards not fully shown)', decides: true },
      { keys: 'd', what: 'deny', decides: true },
      { keys: 'r', what: 'deny with a reason (type it, Enter sends, Esc cancels)', decides: true },
      { keys: 'x, Enter', what: 'details: the whole card (j/k, Space/PgDn, PgUp, g/G to scroll)' },
      { keys: 'n/p, →/←', what: 'next/previous waiting call (j/k too in the compact card)' },
    ],
  },
  { title: 'Activity', keys: [{ keys: 'G', what: 'follow the tail' }, { keys: '/', what: 'filter: session:ID tool:NAME decision:WORD error' }] },
  { title: 'Grants', keys: [{ keys: 'r', what: 'revoke the selected grant', decides: true }] },
  {
    title: 'Catalog',
    keys: [
      { keys: 'A', what: 'accept the pending catalog (asks first)', decides: true },
      { keys: 'R', what: 'reject the pending catalog (asks first)', decides: true },
    ],
  },
];
