/**
 * Benchmark: how fast an agent host's spawn of `postern mcp` answers
 * `initialize`, against the smallest server the MCP SDK makes (scripts/bare-sdk-server.mjs),
 * side by side, alternating, in one run. Each sample spawns a fresh process,
 * writes `initialize` at once and stops the clock at the first answer line.
 * The daemon is not running (the shim answers initialize itself); with a
 * daemon the shim adds one local socket round trip to the same start-up.
 * Reports medians and the ratio (target ≤ 1.2×). Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { report } from './report.js';
import { median } from './stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);
const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');
const BARE = resolve(import.meta.dirname, '../bare-sdk-server.mjs');
const home = mkdtempSync(join(tmpdir(), 'postern-bench-shim-'));
const INIT = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })}\n`;

function once(args: string[]): Promise<number> {
  return new Promise((done, fail) => {
    const t0 = systemClock.monotonicMs();
    const child = spawn(process.execPath, args, { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', POSTERN_HOME: home }, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (!out.includes('\n')) return;
      const ms = systemClock.monotonicMs() - t0;
      if (!out.includes('"protocolVersion"')) fail(new Error(`unexpected answer: ${out.slice(0, 200)}`));
      child.kill('SIGKILL');
      done(ms);
    });
    child.once('error', fail);
    child.stdin.write(INIT);
  });
}


if (!existsSync(CLI)) throw new Error('build first: npm run build');
const shim: number[] = [];
const bare: number[] = [];
await once([CLI, 'mcp']); // warm the file cache for both
await once([BARE]);
for (let i = 0; i < ROUNDS; i++) {
  shim.push(await once([CLI, 'mcp']));
  bare.push(await once([BARE]));
}
rmSync(home, { recursive: true, force: true });
const s = median(shim);
const b = median(bare);
console.log(`postern mcp start-up (spawn → initialize answered), ${ROUNDS} rounds, medians:`);
console.log(`  bare SDK server  ${b.toFixed(1)} ms`);
console.log(`  postern mcp      ${s.toFixed(1)} ms`);
console.log(`  ratio            ${(s / b).toFixed(2)}× (target ≤ 1.20×)`);
report('shim-start', `postern mcp start-up (spawn → initialize answered), ${ROUNDS} rounds`, [
  { name: 'bare SDK server start-up', value: b, unit: 'ms' },
  { name: 'postern mcp start-up', value: s, unit: 'ms', baseline: 'bare SDK server', baselineValue: b, ratio: s / b, target: '≤ 1.2×' },
]);
