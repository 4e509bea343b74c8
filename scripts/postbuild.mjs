#!/usr/bin/env node
// After tsc: make the CLI entry executable so `npx postern` and the bin link work,
// and copy the approval page's static files (HTML, CSS, its scripts) next to their module:
// they are served as they are, with no build step of their own.
import { chmodSync, cpSync, existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(entry)) chmodSync(entry, 0o755);
cpSync(new URL('../src/daemon/approval-page/static/', import.meta.url), new URL('../dist/daemon/approval-page/static/', import.meta.url), { recursive: true });
