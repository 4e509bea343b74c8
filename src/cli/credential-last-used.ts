/**
 * When each credential was last used, for `postern secret list`: the newest
 * call in the Activity journal that was about to run (its intent) with a
 * revision whose target the accepted catalog gives that credential. Read when
 * listing, so a call costs no vault write. A credential no journaled call
 * used, a journal that cannot be read, or an accepted catalog that does not
 * authenticate leaves the date unknown (`-`), never a guess.
 */
import { existsSync } from 'node:fs';
import type { Catalog } from '../contracts/index.js';
import type { AcceptanceMark } from '../contracts/index.js';
import { loadAcceptedCatalog } from '../home/catalog-store.js';
import type { HomePaths } from '../home/paths.js';
import { openJournals, type CallHead } from '../journal/index.js';

/** Pure: credential name → ISO time of the newest intent that used it. */
function lastUsedByCredential(heads: Iterable<CallHead>, catalog: Catalog): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of heads) {
    if (h.kind !== 'intent') continue;
    const revision = catalog.tools.get(h.call.tool)?.revisions.find((r) => r.revision === h.call.revision_executed);
    if (revision === undefined) continue;
    const credential = revision.action.target.credential;
    const seen = out.get(credential);
    if (seen === undefined || h.at > seen) out.set(credential, h.at);
  }
  return out;
}

/** The last-used times the journal shows; empty when there is no journal or no trusted accepted catalog. */
export async function readLastUsed(paths: HomePaths, macKey: Uint8Array, mark: AcceptanceMark | null): Promise<Map<string, string>> {
  if (!existsSync(paths.journalDir)) return new Map();
  try {
    const accepted = await loadAcceptedCatalog(paths, macKey, mark);
    if (accepted === undefined) return new Map();
    const j = openJournals(paths.journalDir, { readonly: true });
    try {
      return lastUsedByCredential(j.activity.callHeads(), accepted.catalog);
    } finally {
      j.close();
    }
  } catch {
    // a courtesy column: an unreadable journal or catalog leaves it unknown
    return new Map();
  }
}
