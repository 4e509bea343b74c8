// Lets `@modelcontextprotocol/conformance` 0.1.16 run on Node 20: it imports
// `globSync` from `fs`, which Node added in 22. Registered with
// `node --import ./scripts/conformance/node20-shim.mjs`, it registers the
// resolve hook of fs-glob.mjs, which hands the suite's `fs` / `node:fs`
// imports a module that re-exports `node:fs` plus a small `globSync`. Nothing
// else is redirected, and on a Node that has `fs.globSync` no hook is
// installed at all.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') register('./fs-glob.mjs', import.meta.url);
