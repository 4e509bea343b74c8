#!/usr/bin/env node
// After tsc: make the CLI entry executable so `npx postern` and the bin link work.
import { chmodSync, existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(entry)) chmodSync(entry, 0o755);
