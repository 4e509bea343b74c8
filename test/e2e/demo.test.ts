/**
 * `postern demo` end to end, as `npm start` runs it: the built CLI, no
 * terminal, `--headless --agent`. The narration names every step of the
 * story, the summary says they all behaved, the printed request log (the
 * targets' own record) proves the replay and the rejected call sent nothing,
 * no form of the demo token or SSH key is printed, and the temporary home is
 * gone afterwards. A second run is interrupted with SIGINT once the daemon
 * is up: it stops cleanly (130) and still removes its home.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../helpers/cli.js';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `postern demo ARGS` with TMPDIR pointed at `tmp`; `onOutput` may act on the output so far. */
function demo(args: string[], tmp: string, onOutput?: (stdout: string, child: ReturnType<typeof spawn>) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, [CLI, 'demo', ...args], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', TMPDIR: tmp, HOME: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // no controlling terminal, as in CI or a pipe
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      onOutput?.(stdout, child);
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
  });
}

/** The forms of the token's fixed prefix that any leak of the whole token would contain. */
function prefixForms(prefix: string): string[] {
  const b = Buffer.from(prefix, 'utf8');
  const aligned = b.subarray(0, b.length - (b.length % 3));
  return [prefix, b.toString('hex'), aligned.toString('base64'), aligned.toString('base64url'), encodeURIComponent(prefix)];
}

describe('postern demo --headless --agent', () => {
  let tmp: string;
  let run: Run;
  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'postern-demo-test-'));
    run = await demo(['--headless', '--agent'], tmp);
  });
  after(() => rm(tmp, { recursive: true, force: true }));

  it('exits 0 with the summary, well under a minute', (t) => {
    t.diagnostic(`demo run took ${(run.ms / 1000).toFixed(1)} s`);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^Summary: all 8 steps behaved as the story says, in \d+\.\d s \(set-up \d+\.\d s\)\. 4 requests reached the targets;\nno form of tracker-token or deploy-key appeared/m);
    assert.equal(run.stderr, '');
  });

  it('narrates every step of the story, in order', () => {
    const labels = [...run.stdout.matchAll(/^ {2,3}(\d)\. (\S+(?: grant)?)/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(labels, ['1 read', '2 approval', '3 replay', '4 session grant', '5 drift', '6 adapted', '7 rejected', '8 refresh']);
    assert.match(run.stdout, /the agent sees "\[REDACTED:tracker-token\]"/);
    assert.match(run.stdout, /replayed: true/);
    assert.match(run.stdout, /notifications\/tools\/list_changed/);
    assert.match(run.stdout, /adapted to r2 \(r1→r2: defaulted region = "us-east-preview"\)/);
    assert.match(run.stdout, /CONTRACT_STALE, side_effect_started: false, current_revision 2/);
    assert.match(run.stdout, /"command":"[^"]+","args":\["\/[^"]+\/dist\/cli\/main\.js","mcp"\],"env":\{"POSTERN_HOME":"\/[^"]+"\}/);
    assert.doesNotMatch(run.stdout, /npx postern/);
    // The narration speaks of what happens, not of the material behind the design.
    assert.doesNotMatch(run.stdout, /\bseeds?\b/i);
  });

  it('the request log proves the replay and the rejected call sent nothing', () => {
    const section = run.stdout.split(/^Request log .*$/m)[1] ?? '';
    const entries = [...section.matchAll(/^ {2}#(\d+) (http|ssh) +(.*)$/gm)].map((m) => ({ seq: Number(m[1]), target: m[2], text: m[3] ?? '' }));
    assert.deepEqual(entries.map((e) => e.seq), [1, 2, 3, 4], 'append-only, numbered from 1');
    assert.deepEqual(entries.map((e) => e.target), ['http', 'http', 'ssh', 'ssh']);
    assert.equal(entries.filter((e) => e.text.startsWith('POST /tickets')).length, 1, 'one POST despite the replay and the stale call');
    assert.ok(!section.includes('Stale plan'), 'the rejected call reached the tracker');
    assert.match(entries[3]?.text ?? '', /\/srv\/deploy\.sh --branch=fix-signup us-east-preview/);
    const rejected = /^ {3}7\. rejected.*\n(.*)$/m.exec(run.stdout);
    assert.match(rejected?.[0] ?? '', /request log: nothing new/);
    const replay = /^ {3}3\. replay.*\n(.*)$/m.exec(run.stdout);
    assert.match(replay?.[0] ?? '', /request log: nothing new/);
  });

  it('prints no form of the demo secrets', () => {
    const all = run.stdout + run.stderr;
    for (const form of prefixForms('postern-demo-canary-')) assert.ok(!all.includes(form), `a form of the token was printed: ${form}`);
    assert.ok(!/PRIVATE KEY/.test(all), 'the SSH key was printed');
  });

  it('removes its temporary home', () => {
    const home = /^ {2}home {6}(\S+)/m.exec(run.stdout)?.[1];
    assert.ok(home !== undefined && home.startsWith(tmp), 'the home is under TMPDIR');
    assert.equal(existsSync(home), false);
    assert.deepEqual(readdirSync(tmp), []);
  });
});

describe('postern demo interrupted', () => {
  it('SIGINT once the daemon is up: stops cleanly and removes the home', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'postern-demo-test-'));
    try {
      let sent = false;
      const r = await demo(['--headless', '--agent'], tmp, (out, child) => {
        if (!sent && /daemon {4}ready/.test(out)) {
          sent = true;
          child.kill('SIGINT');
        }
      });
      assert.ok(sent, r.stdout);
      assert.equal(r.code, 130, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /stopped the daemon and the targets; removed /);
      assert.doesNotMatch(r.stdout + r.stderr, /INTERNAL|at .*\.js:\d+/);
      assert.deepEqual(readdirSync(tmp), []);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
