#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
// against Postern's HTTP listener and compares every check with the committed
// baseline, expected-failures.json, where each expected failure says why.
//
// 1. A temporary home: a vault, no catalog (the built-in tool only), the listener enabled and
//    authorized on a free port (`postern http enable --port 0`), the built
//    daemon (`npm run build` first).
// 2. The suite cannot send a header, and the listener has no way around its
//    bearer token. So a small forwarding proxy on another loopback port adds
//    `Authorization: Bearer <token>` to every request and passes everything
//    else on as it came; a Host or Origin that names the proxy is rewritten to
//    name the listener (so the suite's "valid localhost" requests stay valid),
//    any other Host or Origin is passed unchanged (so its DNS-rebinding check
//    still reaches the daemon's own gate).
// 3. `conformance server --url <proxy>/mcp`, on Node 20 with node20-shim.mjs.
// 4. Exit 1 on a failing check that is not in the baseline, and on a baseline
//    entry that now passes or is no longer reported (the baseline stays
//    honest); exit 0 otherwise. Nothing here needs the network.
//
// `node scripts/conformance/run.mjs --list` prints the failing checks as
// baseline entries (reasons left for a person to write) and exits 0.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clearTimeout, setTimeout } from 'node:timers';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const CLI = join(root, 'dist', 'cli', 'main.js');
const SUITE = join(root, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const SHIM = join(here, 'node20-shim.mjs');
const BASELINE = join(here, 'expected-failures.json');
const PASSPHRASE = 'conformance-run-passphrase';
const SUITE_TIMEOUT_MS = 150_000;
const listOnly = process.argv.includes('--list');

const say = (line) => (listOnly ? process.stderr : process.stdout).write(`conformance: ${line}\n`);

function run(args, env, opts = {}) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, out }));
  });
}

function startDaemon(env, passFile) {
  const child = spawn(process.execPath, [CLI, 'daemon', '--passphrase-file', passFile], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolveStart, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`the daemon did not start: ${log}`)), 60_000);
    child.stderr.on('data', (d) => {
      log += d;
      if (log.includes('daemon ready')) {
        clearTimeout(timer);
        resolveStart(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited ${code}: ${log}`));
    });
  });
}

/** The forwarding proxy of step 2. */
function startProxy(targetPort, token) {
  const server = createServer((req, res) => {
    const own = new Set([`127.0.0.1:${server.address().port}`, `localhost:${server.address().port}`]);
    const headers = { ...req.headers };
    const host = String(headers.host ?? '').toLowerCase();
    if (own.has(host)) headers.host = host.replace(/:\d+$/, `:${targetPort}`);
    const origin = typeof headers.origin === 'string' ? headers.origin.toLowerCase() : undefined;
    if (origin !== undefined && own.has(origin.replace(/^http:\/\//, ''))) headers.origin = origin.replace(/:\d+$/, `:${targetPort}`);
    headers.authorization = `Bearer ${token}`;
    const upstream = request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolveListen) => server.listen(0, '127.0.0.1', () => resolveListen(server)));
}

async function checksIn(dir) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.name !== 'checks.json') continue;
    const folder = entry.parentPath ?? entry.path;
    const scenario = /server-(.+)-\d{4}-\d\d-\d\dT/.exec(folder)?.[1] ?? /server-(.+?)-[^-]+$/.exec(folder)?.[1] ?? folder;
    for (const c of JSON.parse(await readFile(join(folder, entry.name), 'utf8'))) found.push({ scenario, check: c.id, status: c.status, message: c.errorMessage ?? '' });
  }
  return found;
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'postern-conformance-'));
  const home = join(dir, 'home');
  // The throwaway home uses the test key-derivation profile (src/vault/kdf-profile.ts), as the test suite does.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', POSTERN_HOME: home, POSTERN_TEST_KDF: 'insecure-fast-for-tests-only' };
  const passFile = join(dir, 'pass');
  await writeFile(passFile, `${PASSPHRASE}\n`, { mode: 0o600 });
  let daemon;
  let proxy;
  try {
    say('preparing a temporary home (test key-derivation profile)…');
    for (const args of [['init'], ['http', 'enable', '--port', '0']]) {
      const r = await run([CLI, ...args, '--passphrase-file', passFile], env);
      if (r.code !== 0) throw new Error(`postern ${args.join(' ')}: ${r.out}`);
    }
    daemon = await startDaemon(env, passFile);
    const info = JSON.parse(await readFile(join(home, 'run', 'mcp-http.json'), 'utf8'));
    const token = (await readFile(info.token_file, 'utf8')).trim();
    const targetPort = Number(new URL(info.url).port);
    proxy = await startProxy(targetPort, token);
    const url = `http://127.0.0.1:${proxy.address().port}/mcp`;
    say(`listener ${info.url}; the suite talks to ${url} (a proxy that adds the bearer token)`);
    const out = join(dir, 'results');
    const suite = await run(['--import', SHIM, SUITE, 'server', '--url', url, '-o', out], { ...env, NO_COLOR: '1' }, { timeout: SUITE_TIMEOUT_MS });
    const checks = await checksIn(out).catch(() => []);
    if (checks.length === 0) throw new Error(`the suite reported no checks (exit ${suite.code}): ${suite.out.slice(-2000)}`);
    const failing = checks.filter((c) => c.status === 'FAILURE');
    if (listOnly) {
      process.stdout.write(`${JSON.stringify(failing.map((c) => ({ scenario: c.scenario, check: c.check, reason: `TODO (${c.message.slice(0, 120)})` })), null, 2)}\n`);
      return 0;
    }
    const baseline = JSON.parse(await readFile(BASELINE, 'utf8'));
    const key = (c) => `${c.scenario} / ${c.check}`;
    const expected = new Map(baseline.map((e) => [key(e), e]));
    const seen = new Map(checks.map((c) => [key(c), c]));
    const unexplained = baseline.filter((e) => typeof e.reason !== 'string' || e.reason.trim() === '' || e.reason.startsWith('TODO'));
    const regressions = failing.filter((c) => !expected.has(key(c)));
    const stale = baseline.filter((e) => seen.get(key(e))?.status !== 'FAILURE');
    const passed = checks.filter((c) => c.status === 'SUCCESS').length;
    say(`${checks.length} checks in ${new Set(checks.map((c) => c.scenario)).size} scenarios: ${passed} passed, ${failing.length} failed (${failing.length - regressions.length} expected), ${checks.length - passed - failing.length} other`);
    say(`passed: ${checks.filter((c) => c.status === 'SUCCESS').map(key).join(', ')}`);
    for (const c of regressions) say(`NEW FAILURE ${key(c)}: ${c.message}`);
    for (const e of stale) say(`STALE BASELINE ${key(e)}: ${seen.has(key(e)) ? `now ${seen.get(key(e)).status}` : 'no longer reported'}; remove it from expected-failures.json`);
    for (const e of unexplained) say(`UNEXPLAINED BASELINE ENTRY ${key(e)}: every entry needs a reason`);
    return regressions.length + stale.length + unexplained.length === 0 ? 0 : 1;
  } finally {
    proxy?.close();
    proxy?.closeAllConnections();
    if (daemon !== undefined && daemon.exitCode === null) {
      const gone = new Promise((r) => daemon.once('exit', r));
      daemon.kill('SIGTERM');
      await gone;
    }
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`conformance: FAILED: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
