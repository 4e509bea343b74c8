/**
 * Benchmark: latency of one trivial SSH command against the in-process test
 * server, three ways side by side in one process: raw ssh2 `exec` on an open
 * connection (the floor), SshPool.exec on a warm pool, and executeSsh (a new
 * connection per call). Iterations rotate the order so machine noise hits all
 * three; reports median and p90 and the ratios. Asserts nothing about
 * absolute time (these machines are shared and noisy).
 */
import ssh2 from 'ssh2';
import { executeSsh, SshPool } from '../../src/executors/ssh/index.js';
import { PASSWORD, action, passwordCredential, startSshServer } from '../../test/unit/executors/ssh/support.js';

const WARMUP = 5;
const ROUNDS = 30;

// Nagle off on the server too, so the numbers show the client side, not delayed ACKs.
const srv = await startSshServer(undefined, { noDelay: true });
const echo = action(srv, ['echo', 'x']);
const cred = passwordCredential();

const raw = new ssh2.Client();
await new Promise<void>((resolve, reject) => {
  raw.once('ready', resolve).once('error', reject);
  raw.on('connect', () => raw.setNoDelay(true));
  raw.connect({ host: '127.0.0.1', port: srv.port, username: 'bench', password: PASSWORD, hostVerifier: () => true });
});
const rawExec = (): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    raw.exec(echo.command, (err, stream) => {
      if (err) return reject(err);
      stream.on('data', () => undefined).on('close', () => resolve());
      stream.stderr.resume();
    });
  });

const pool = new SshPool();
const variants: readonly { readonly name: string; readonly run: () => Promise<unknown> }[] = [
  { name: 'raw ssh2 exec (open connection)', run: rawExec },
  { name: 'SshPool.exec (warm pool)', run: () => pool.exec(echo, cred) },
  { name: 'executeSsh (fresh connection)', run: () => executeSsh(echo, cred) },
];

const times: number[][] = variants.map(() => []);
for (let i = 0; i < WARMUP + ROUNDS; i++) {
  for (let k = 0; k < variants.length; k++) {
    const v = (i + k) % variants.length;
    const t = process.hrtime.bigint();
    await variants[v]!.run();
    if (i >= WARMUP) times[v]!.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
}

const quantile = (xs: readonly number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const med = times.map((xs) => quantile(xs, 0.5));
console.log(`ssh exec latency of \`${echo.command}\`, ${ROUNDS} rounds after ${WARMUP} warm-up, in-process server on 127.0.0.1`);
console.log(`  ${'variant'.padEnd(34)} ${'median'.padStart(9)} ${'p90'.padStart(9)}`);
variants.forEach((v, i) => console.log(`  ${v.name.padEnd(34)} ${`${med[i]!.toFixed(2)} ms`.padStart(9)} ${`${quantile(times[i]!, 0.9).toFixed(2)} ms`.padStart(9)}`));
console.log(`  ratio pooled / raw   = ${(med[1]! / med[0]!).toFixed(2)}`);
console.log(`  ratio fresh / raw    = ${(med[2]! / med[0]!).toFixed(2)}`);
console.log(`  ratio fresh / pooled = ${(med[2]! / med[1]!).toFixed(2)}`);

raw.end();
await pool.close();
await srv.close();

const { report } = await import('./report.js');
report('ssh', `ssh exec of \`${echo.command}\`, ${ROUNDS} rounds, in-process server on 127.0.0.1`, [
  { name: 'raw ssh2 exec, open connection (floor)', value: med[0]!, unit: 'ms' },
  { name: 'SshPool.exec, warm pool', value: med[1]!, unit: 'ms', baseline: 'raw ssh2', baselineValue: med[0]!, ratio: med[1]! / med[0]! },
  { name: 'executeSsh, fresh connection', value: med[2]!, unit: 'ms', baseline: 'raw ssh2', baselineValue: med[0]!, ratio: med[2]! / med[0]! },
]);
