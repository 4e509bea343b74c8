/**
 * Bounding agent-supplied labels (client name and version, run id, tool
 * name) before they are journaled or echoed. A value over the limit keeps its
 * start and ends with a visible mark of how much was cut, so a reviewer can
 * tell a long value from a short one that happens to share its prefix.
 */
export function clipLabel(s: string, max: number): string {
  const chars = Array.from(s);
  if (chars.length <= max) return s;
  return `${chars.slice(0, max).join('')}…[+${chars.length - max} chars]`;
}
