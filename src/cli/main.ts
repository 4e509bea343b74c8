#!/usr/bin/env node
/** Entry point of the `postern` binary; everything else lives in program.ts. */
import { main } from './program.js';

process.exitCode = await main(process.argv.slice(2));
