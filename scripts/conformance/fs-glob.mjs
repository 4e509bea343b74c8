// Two roles in one file (node20-shim.mjs):
// - imported as the conformance suite's `fs`: `node:fs` plus the
//   `globSync(pattern, { cwd })` that Node 22 has, for the patterns the suite
//   uses (`**/checks.json`), i.e. `**`, `*` and `?` over `/`-separated
//   relative paths; it returns paths relative to `cwd`;
// - registered as a module hook: its `resolve` sends only the suite's imports
//   of `fs` / `node:fs` here; nothing else is redirected.
import fs from 'node:fs';
import { relative, resolve as resolvePath, sep } from 'node:path';

export * from 'node:fs';
export default fs;

const SELF = import.meta.url;

export function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes('/@modelcontextprotocol/conformance/') === true;
  if (fromSuite && (specifier === 'fs' || specifier === 'node:fs')) return { url: SELF, shortCircuit: true };
  return next(specifier, context);
}

function toRegExp(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      // `**/` matches zero or more directories; a trailing `**` matches anything.
      if (pattern[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

export function globSync(patterns, options = {}) {
  const cwd = resolvePath(options.cwd ?? process.cwd());
  const list = (Array.isArray(patterns) ? patterns : [patterns]).map(toRegExp);
  let entries;
  try {
    entries = fs.readdirSync(cwd, { recursive: true });
  } catch {
    return [];
  }
  const out = [];
  for (const e of entries) {
    const rel = relative(cwd, resolvePath(cwd, String(e))).split(sep).join('/');
    if (list.some((r) => r.test(rel))) out.push(rel);
  }
  return out.sort();
}
