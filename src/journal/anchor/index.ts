/**
 * The journal anchor's public surface (docs/audit.md, "The anchor"): opening
 * the journals against it, the operator's ways out, the read-only inspection,
 * and `reauthenticateAnchor` for anything that changes the vault's keys.
 */
export { openAnchoredJournals, prepareNewJournal, inspectAnchor } from './open.js';
export { journalPresence } from '../presence.js';
export type { AnchorContext, AnchoredJournals, AnchorInspection, NewJournalPlan } from './open.js';
export { readAnchor, writeAnchor, reauthenticateAnchor, anchorMismatch, anchorFileText } from './file.js';
export { anchorMac, sealAnchor, anchorIsAuthentic, judgeAnchor, judgeAgainstVault, describeProblem, ANCHOR_FORMAT } from '../anchor-record.js';
export type { AnchorRecord, AnchorVerdict, JournalProblem, RecordedJournal, StoredAnchor, FoundJournal } from '../anchor-record.js';
export { AnchorKeeper, ANCHOR_LAG_MS } from './keeper.js';
