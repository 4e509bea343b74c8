/**
 * Benchmark: latency of one trivial SSH command (`echo x`) against one test
 * server on 127.0.0.1 (the ssh2 test server of the unit tests, in a process
 * of its own: scripts/bench/ssh-server.ts), side by side:
 *   - raw ssh2 `exec` on an open connection (the floor);
 *   - SshPool.exec on a warm pool, in this process;
 *   - executeSsh (a new connection per call), in this process;
 *   - a naive MCP proxy on the same SDK holding one open ssh2 connection
 *     (scripts/bench/naive-ssh-proxy.ts: no vault, journal, approval, caps or
 *     redaction) — what a user would otherwise run;
 *   - Postern through MCP: the official SDK 2.x client over stdio to the
 *     built `postern mcp`, a real daemon with the target's host key pinned
 *     in its catalog and the key in its vault (read tool, no approval);
 *   - for reference, a Postern HTTP read tool through the same client and
 *     daemon against a loopback HTTP server, so the daemon's per-call
 *     pipeline (journal intent + outcome, redaction, shaping) can be told
 *     apart from what is SSH-specific.
 * Each round runs a block of back-to-back calls per variant, the order
 * rotating from round to round so machine noise hits all of them; reports the
 * medians of the round medians (and of the p90s) and the ratios to raw. Asserts nothing about absolute time
 * (these machines are shared and noisy). Needs `npm run build` (the daemon
 * and the shim run from dist/).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import ssh2 from 'ssh2';
import { systemClock } from '../../src/clock/index.js';
import { executeSsh, SshPool } from '../../src/executors/ssh/index.js';
import { install } from '../../test/helpers/daemon.js';
import { sshAction } from '../../test/helpers/ssh-fixtures.js';
import { keyCredential } from '../../test/unit/executors/ssh/support.js';
import { report } from './report.js';
import { quantile } from './stats.js';

const WARMUP = 10;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const CALLS = Number(process.env['BENCH_SSH_CALLS'] ?? 30);
const clock = systemClock;

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
const server = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'ssh-server.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
const srv = await new Promise<{ port: number; fingerprint: string; clientKey: string }>((ok, fail) => {
  server.once('exit', (code) => fail(new Error(`the SSH bench server exited (${code})`)));
  createInterface({ input: server.stdout }).once('line', (line) => ok(JSON.parse(line) as { port: number; fingerprint: string; clientKey: string }));
});
const echo = sshAction({ host: '127.0.0.1', port: srv.port, user: 'deploy' }, ['echo', 'x'], srv.fingerprint);
const cred = keyCredential(srv.clientKey);

const raw = new ssh2.Client();
await new Promise<void>((resolve, reject) => {
  raw.once('ready', resolve).once('error', reject);
  raw.on('connect', () => raw.setNoDelay(true));
  raw.connect({ host: '127.0.0.1', port: srv.port, username: 'deploy', privateKey: srv.clientKey, hostVerifier: () => true });
});
const rawExec = (): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    raw.exec(echo.command, (err, stream) => {
      if (err) return reject(err);
      stream.on('data', () => undefined).on('close', () => resolve());
      stream.stderr.resume();
    });
  });

// The daemon: the same server, its host key pinned; an HTTP read tool beside it for reference.
const target = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${(target.address() as { port: number }).port}`;
const noInput = { type: 'object', properties: {}, required: [] };
const inst = await install({
  secrets: [
    { name: 'deploy-key', kind: 'ssh_key', value: srv.clientKey },
    { name: 'api-token', kind: 'http_bearer', value: 'bench-token-0123456789' },
  ],
});
await inst.acceptCatalog({
  targets: {
    box: { ssh: { host: '127.0.0.1', port: srv.port, user: 'deploy', credential: 'deploy-key', host_key: srv.fingerprint } },
    local: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } },
  },
  tools: {
    echo_x: { description: 'Echo x.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: noInput, ssh: { target: 'box', argv: ['echo', 'x'] } }] },
    get_json: { description: 'Read JSON.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: noInput, http: { target: 'local', method: 'GET', path: '/json' } }] },
  },
});
await inst.startDaemon();
async function mcpClient(args: string[], extra: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'bench-ssh', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, env: { ...env, ...extra }, stderr: 'inherit' }));
  return client;
}
const agent = await mcpClient([resolve(import.meta.dirname, '../../dist/cli/main.js'), 'mcp'], { POSTERN_HOME: inst.sb.home });
const naive = await mcpClient(['--import', 'tsx', resolve(import.meta.dirname, 'naive-ssh-proxy.ts')], { SSH_PORT: String(srv.port), SSH_KEY: srv.clientKey, SSH_FINGERPRINT: srv.fingerprint });
const viaMcp = (client: Client, tool: string) => async (): Promise<void> => {
  const r = (await client.callTool({ name: tool, arguments: {} })) as { isError?: boolean; content?: unknown };
  if (r.isError === true) throw new Error(`${tool} failed: ${JSON.stringify(r.content).slice(0, 300)}`);
};


const pool = new SshPool();
const variants: readonly { readonly name: string; readonly run: () => Promise<unknown> }[] = [
  { name: 'raw ssh2 exec (open connection)', run: rawExec },
  { name: 'SshPool.exec (warm pool)', run: () => pool.exec(echo, cred) },
  { name: 'executeSsh (fresh connection)', run: () => executeSsh(echo, cred) },
  { name: 'naive SDK proxy through MCP', run: viaMcp(naive, 'echo_x') },
  { name: 'Postern SSH tool through MCP', run: viaMcp(agent, 'echo_x') },
  { name: 'Postern HTTP read through MCP', run: viaMcp(agent, 'get_json') },
];

// Each round runs CALLS back-to-back calls of each variant (an agent's calls come back to back),
// in a rotating order; a variant's figure is the median of its round medians.
const rounds: number[][] = variants.map(() => []);
const p90s: number[][] = variants.map(() => []);
for (const v of variants) for (let i = 0; i < WARMUP; i++) await v.run();
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < variants.length; k++) {
    const v = (r + k) % variants.length;
    const xs: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t = clock.monotonicMs();
      await variants[v]!.run();
      xs.push(clock.monotonicMs() - t);
    }
    rounds[v]!.push(quantile(xs, 0.5));
    p90s[v]!.push(quantile(xs, 0.9));
  }
}

for (const c of [agent, naive]) await c.close().catch(() => undefined);
await inst.cleanup();
raw.end();
await pool.close();
const serverGone = new Promise((r) => server.once('exit', r));
server.stdin.end();
await serverGone;
target.close();

const med = rounds.map((xs) => quantile(xs, 0.5));
const p90 = p90s.map((xs) => quantile(xs, 0.5));
const [rawMs, pooledMs, freshMs, naiveMs, mcpMs, httpMs] = [med[0]!, med[1]!, med[2]!, med[3]!, med[4]!, med[5]!];
console.log(`ssh exec latency of \`${echo.command}\`, ${ROUNDS} rounds × ${CALLS} back-to-back calls per variant, medians of the round medians, ssh2 test server in its own process on 127.0.0.1 (load ${loadavg()[0]!.toFixed(2)})`);
console.log(`  ${'variant'.padEnd(34)} ${'median'.padStart(9)} ${'p90'.padStart(9)} ${'/ raw'.padStart(7)}`);
variants.forEach((v, i) =>
  console.log(`  ${v.name.padEnd(34)} ${`${med[i]!.toFixed(2)} ms`.padStart(9)} ${`${p90[i]!.toFixed(2)} ms`.padStart(9)} ${`${(med[i]! / rawMs).toFixed(2)}×`.padStart(7)}`),
);
// What the daemon adds to an SSH call beyond what it adds to an HTTP read (the same hop and pipeline) and the pooled exec itself.
const sshOnly = mcpMs - httpMs - pooledMs;
console.log(`  Postern SSH through MCP / naive SDK proxy = ${(mcpMs / naiveMs).toFixed(2)}×; − SshPool.exec = ${(mcpMs - pooledMs).toFixed(2)} ms (the MCP hop through the shim, the daemon's pipeline)`);
console.log(`  SSH-specific in the daemon: Postern SSH − Postern HTTP read − SshPool.exec = ${sshOnly.toFixed(2)} ms`);

const vsRaw = (name: string, value: number, target?: string) => ({ name, value: Number(value.toFixed(2)), unit: 'ms', baseline: 'raw ssh2 exec', baselineValue: Number(rawMs.toFixed(2)), ratio: Number((value / rawMs).toFixed(2)), ...(target === undefined ? {} : { target }) });
report('ssh', 'SSH exec of `echo x`: raw ssh2 vs SshPool vs fresh connection vs Postern through MCP', [
  vsRaw('SshPool.exec warm p50', pooledMs),
  vsRaw('executeSsh fresh connection p50', freshMs),
  vsRaw('naive SDK proxy through MCP p50', naiveMs),
  vsRaw('Postern SSH tool through MCP p50', mcpMs, '≤ 1.5×'),
  { name: 'Postern SSH tool through MCP p50, to the naive proxy', value: Number(mcpMs.toFixed(2)), unit: 'ms', baseline: 'naive SDK proxy', baselineValue: Number(naiveMs.toFixed(2)), ratio: Number((mcpMs / naiveMs).toFixed(2)) },
  { name: 'Postern HTTP read through MCP p50 (reference)', value: Number(httpMs.toFixed(2)), unit: 'ms' },
  { name: 'SSH-specific in the daemon (Postern SSH − Postern HTTP read − SshPool.exec)', value: Number(sshOnly.toFixed(2)), unit: 'ms' },
]);
