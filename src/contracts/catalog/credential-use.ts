/**
 * Which tools of a catalog send a given vault credential: the tools with any
 * revision (current, pinned or adaptable) whose target names it. Pure; used by
 * `postern secret rm` to warn before it breaks them.
 */
import type { Catalog } from '../types.js';

export function toolsUsingCredential(catalog: Catalog, credential: string): string[] {
  const out: string[] = [];
  for (const tool of catalog.tools.values()) {
    if (tool.revisions.some((r) => r.action.target.credential === credential)) out.push(tool.name);
  }
  return out.sort();
}
