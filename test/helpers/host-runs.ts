/**
 * Real agent hosts driven end to end, headless, each pointed at a fake model
 * endpoint on loopback (test/helpers/fake-model.ts) that answers with
 * scripted tool calls: the host launches `postern mcp` from the entry
 * `postern setup HOST --write` made, the daemon runs the call against a
 * loopback HTTP service, and the model is shown the redacted result. One
 * test file a host (test/e2e/host-runs-HOST.test.ts), each calling
 * `describeHostRuns`, so that no file outlives the test runner's limit.
 *
 * For each host: a read tool; an approval given after a few seconds; an
 * approval given after longer than the host's own tool timeout (set low in
 * its configuration, so the run stays short); the host started while the
 * daemon is down after earlier sessions listed the tools (the remembered
 * tools are offered, a call answers DAEMON_UNAVAILABLE, the same call runs
 * once the daemon does); the host started while the daemon is down with no
 * listing remembered, the daemon started mid-run (the real tools appear
 * without restarting the host); and a canary search of every request the fake
 * model received. The installed version is compared with the recorded one
 * (test/e2e/fixtures/host-versions.json): when a host changes, the test says
 * what changed.
 *
 * Hosts: Claude Code (Anthropic Messages API via ANTHROPIC_BASE_URL, MCP
 * tool search off so Postern's tools are offered directly, MCP_TOOL_TIMEOUT
 * for its tool timeout), Codex (`codex exec`, the OpenAI Responses API via a
 * custom model provider, `tool_timeout_sec` in the postern table) and Gemini
 * CLI (`gemini -p`, the Gemini API via GOOGLE_GEMINI_BASE_URL, a named model
 * so no routing classifier is asked first, the per-server `timeout` in
 * mcpServers.postern). They are the pinned versions in .ci/hosts; a file
 * skips where its host is absent unless POSTERN_REQUIRE_AGENT_HOSTS=1.
 *
 * Measured: no host outlives its tool timeout while an approval waits
 * (Claude Code and Codex ask for progress but do not reset their timeout on
 * it): the host gives up, its cancellation withdraws the card, nothing runs.
 * Keep the host's tool timeout above `approval_timeout_seconds`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Installation } from './daemon.js';
import type { FakeHttpServer } from './fake-http.js';
import { canary, httpFixture } from './fixture.js';
import { startFakeModel, type Script } from './fake-model.js';
import type { ApprovalCard } from '../../src/protocol/approvals.js';

const HOSTS_DIR = join(process.cwd(), '.ci', 'hosts', 'node_modules');
const RECORDED = JSON.parse(readFileSync(join(process.cwd(), 'test', 'e2e', 'fixtures', 'host-versions.json'), 'utf8')) as Record<string, string>;
const PACKAGES = {
  'claude-code': { pkg: '@anthropic-ai/claude-code', bin: 'claude' },
  codex: { pkg: '@openai/codex', bin: 'codex' },
  gemini: { pkg: '@google/gemini-cli', bin: 'gemini' },
} as const;
export type HostName = keyof typeof PACKAGES;

interface Driver {
  /** The name the host gives Postern's tool `name` when it offers it to the model. */
  tool(name: string): string;
  /** What the host tells the model when its tool timeout passes. */
  readonly timedOut: RegExp;
  run(script: Script): Promise<HostRun>;
  /** Codex: `codex exec resume --last`, the last run's conversation continued by a new process. */
  readonly resume?: (script: Script) => Promise<HostRun>;
}
interface HostRun {
  readonly code: number | null;
  readonly out: string;
}

/**
 * The host's tool timeout, set low so an approval can outlast it in a short run, and long enough
 * that an approval given after a few seconds lands well inside it on a loaded machine.
 */
const HOST_TOOL_TIMEOUT_MS = 20_000;
/** How long the operator of "an approval given after a few seconds" takes. */
const OPERATOR_DELAY_MS = 3000;

const installedVersion = (host: HostName): string => (JSON.parse(readFileSync(join(HOSTS_DIR, PACKAGES[host].pkg, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * Cases a host does not pass, each with what the host does instead (marked `todo`, never hidden).
 * Measured on Codex 0.171 (`codex exec`): told tools/list_changed, it keeps offering postern_status to
 * the end of the run; its MCP client only logs the notification (docs/decisions.md, "Real hosts against
 * fake model endpoints"). What the user does instead, resume the session, is a case of its own.
 */
const NOT_YET: Partial<Record<HostName, { readonly daemonUp?: string }>> = {
  codex: { daemonUp: 'Codex does not act on tools/list_changed (openai/codex#10105): a session keeps the tools it first listed — covered once any session has listed them (the remembered listing, the case above) or `setup codex --write` ran with the daemon up; a first-ever session started while the daemon is down resumes once it runs' },
};

/** The end-to-end runs of one host, its own `describe`. */
export function describeHostRuns(host: HostName): void {
  const present = existsSync(join(HOSTS_DIR, '.bin', PACKAGES[host].bin));
  const required = process.env['POSTERN_REQUIRE_AGENT_HOSTS'] === '1';
  const skip = present || required ? false : `${host} is not installed (npm ci --prefix .ci/hosts --ignore-scripts)`;
  const TOKEN = canary(`host-${host}`);

  describe(`${host} calls Postern end to end against a fake model`, { skip }, () => {
    let inst: Installation;
    let http: FakeHttpServer;
    let userHome: string;
    let project: string;
    let written: string;
    /** Every request the fake model received, across every run. */
    const received: string[] = [];

    before(async () => {
      const q = { type: 'object', properties: { q: { type: 'string', maxLength: 50 } }, required: ['q'] };
      const title = { type: 'object', properties: { title: { type: 'string', maxLength: 100 } }, required: ['title'] };
      ({ http, inst } = await httpFixture({
        token: TOKEN,
        config: { approval_timeout_seconds: 60, approval_wait_without_progress_seconds: 45 },
        tools: {
          echo_read: { description: 'Echo a word back.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: q, http: { target: 'local', method: 'GET', path: '/echo', query: { q: '{q}' } } }] },
          gated_write: { description: 'A write the operator approves.', effect: 'write', approval: 'per-call', revisions: [{ revision: 1, input: title, http: { target: 'local', method: 'POST', path: '/echo', body: { title: '{title}' } } }] },
        },
        start: false,
      }));
      userHome = join(inst.sb.dir, 'user');
      project = join(inst.sb.dir, 'project');
      await mkdir(userHome);
      await mkdir(project);
      const w = await inst.sb.run(['setup', host, '--write'], { env: { HOME: userHome } });
      assert.equal(w.code, 0, w.stderr);
      if (host === 'codex') {
        written = await readFile(codexConfig(), 'utf8');
        assert.ok(written.startsWith('[mcp_servers.postern]\n') && written.endsWith('default_tools_approval_mode = "approve"\n'), written);
      }
      if (host === 'gemini') {
        written = await readFile(geminiSettings(), 'utf8');
        const entry = (JSON.parse(written) as { mcpServers: { postern: Record<string, unknown> } }).mcpServers.postern;
        assert.ok(entry['command'] !== undefined, written);
      }
    });

    after(async () => {
      await inst.cleanup();
      await http.close();
    });

    const codexConfig = (): string => join(userHome, '.codex', 'config.toml');
    /** Where `postern mcp` remembers the daemon's last listing for this user (src/mcp/remembered-listing.ts). */
    const listings = (): string => join(userHome, '.local', 'state', 'postern', 'listings');
    /** A host that has never listed the tools: no remembered listing. */
    const forgetListings = (): Promise<void> => rm(listings(), { recursive: true, force: true });
    const geminiSettings = (): string => join(userHome, '.gemini', 'settings.json');

    /** Runs the host's CLI once to its end; what it printed is returned. */
    async function runHost(args: readonly string[], env: Record<string, string>): Promise<HostRun> {
      const child = spawn(join(HOSTS_DIR, '.bin', PACKAGES[host].bin), [...args], {
        cwd: project,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: userHome, NO_COLOR: '1', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
      const code = await new Promise<number | null>((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', resolve);
      });
      return { code, out };
    }

    async function withModel(api: 'anthropic' | 'openai-responses' | 'gemini', script: Script, run: (url: string) => Promise<HostRun>): Promise<HostRun> {
      const model = await startFakeModel(api, script);
      try {
        return await run(model.url);
      } finally {
        received.push(...model.received);
        await model.close();
      }
    }

    /**
     * Claude Code does not wait for its MCP servers before the first request: under load `postern mcp` may not be
     * connected yet, and the model is offered WaitForMcpServers instead. The model calls it (as its description
     * says) until a Postern tool is offered; the script sees neither those turns nor their results.
     */
    const waitingForServers = (script: Script): Script => {
      let waits = 0;
      return (t) => {
        if (!t.tools.some((n) => n.startsWith('mcp__postern__')) && t.tools.includes('WaitForMcpServers') && waits < 5) {
          waits += 1;
          return { kind: 'call', tool: 'WaitForMcpServers', args: {} };
        }
        return script({ ...t, results: t.results.slice(waits) });
      };
    };

    /** Each host, headless, against a fake model of its API answering by the script; what the model received is kept. */
    const drivers: Record<HostName, () => Driver> = {
      'claude-code': () => ({
        tool: (name) => `mcp__postern__${name}`,
        timedOut: new RegExp(`timed out after ${HOST_TOOL_TIMEOUT_MS / 1000}s`),
        run: (script) => withModel('anthropic', waitingForServers(script), (url) => runHost(['-p', 'Use the postern tools.', '--output-format', 'json', '--allowedTools', 'mcp__postern'], {
          ANTHROPIC_BASE_URL: url,
          ANTHROPIC_API_KEY: 'sk-fake-model',
          // Postern's tools offered directly, not behind Claude Code's tool search.
          ENABLE_TOOL_SEARCH: 'false',
          MCP_TOOL_TIMEOUT: String(HOST_TOOL_TIMEOUT_MS),
          DISABLE_AUTOUPDATER: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        })),
      }),
      codex: () => {
        const codex = (args: readonly string[]) => (script: Script) => withModel('openai-responses', script, async (url) => {
          // A custom model provider at the fake endpoint, above the [mcp_servers.postern] table `setup codex --write` made.
          const provider = ['model = "fake-model"', 'model_provider = "fake"', '', '[model_providers.fake]', 'name = "fake"', `base_url = "${url}/v1"`, 'wire_api = "responses"', 'env_key = "FAKE_MODEL_KEY"', ''];
          await writeFile(codexConfig(), [...provider, written.trimEnd(), `tool_timeout_sec = ${HOST_TOOL_TIMEOUT_MS / 1000}`, ''].join('\n'));
          return runHost([...args, '--skip-git-repo-check', 'Use the postern tools.'], { CODEX_HOME: join(userHome, '.codex'), FAKE_MODEL_KEY: 'sk-fake-model' });
        });
        return { tool: (name) => `mcp__postern.${name}`, timedOut: /timed out|deadline/i, run: codex(['exec']), resume: codex(['exec', 'resume', '--last']) };
      },
      gemini: () => ({
        tool: (name) => `mcp_postern_${name}`,
        timedOut: /timed out/i,
        run: (script) => withModel('gemini', script, async (url) => {
          // The mcpServers.postern entry `setup gemini --write` made, its `timeout` (ms) set low; an API key's
          // auth; nothing that reaches the internet (update check, telemetry, usage statistics, IDE).
          const made = JSON.parse(written) as { mcpServers: { postern: Record<string, unknown> } };
          const settings = {
            ...made,
            mcpServers: { postern: { ...made.mcpServers.postern, timeout: HOST_TOOL_TIMEOUT_MS } },
            security: { auth: { selectedType: 'gemini-api-key' } },
            general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, checkpointing: { enabled: false } },
            privacy: { usageStatisticsEnabled: false },
            telemetry: { enabled: false },
            ide: { enabled: false },
          };
          await writeFile(geminiSettings(), `${JSON.stringify(settings, null, 2)}\n`);
          // A named model: the default ("auto") first asks a classifier model to route the prompt, and retries
          // with backoff for about 90 s when the answer is not its JSON.
          return runHost(['-m', 'gemini-2.5-flash', '-p', 'Use the postern tools.', '--output-format', 'json', '--allowed-mcp-server-names', 'postern', '--yolo'], {
            GOOGLE_GEMINI_BASE_URL: url,
            GEMINI_API_KEY: 'fake-model-key',
            // The project directory trusted for this run (headless, an untrusted folder refuses to run).
            GEMINI_CLI_TRUST_WORKSPACE: 'true',
          });
        }),
      }),
    };
    const d = drivers[host]();

    /** The model's side of one call: call `tool` once, then report what came back. */
    const once = (tool: string, args: Record<string, unknown>, seen: string[]): Script => (t) => {
      if (t.results.length > 0) {
        seen.push(...t.results);
        return { kind: 'text', text: 'done' };
      }
      return t.tools.includes(tool) ? { kind: 'call', tool, args } : { kind: 'text', text: `no ${tool} among ${t.tools.join(',')}` };
    };

    /**
     * The model's side of a call that may be answered APPROVAL_PENDING: it calls
     * again with the same arguments (the same idempotency key) until the
     * decision is taken, as the error's required action says.
     */
    const untilDecided = (tool: string, args: Record<string, unknown>, seen: string[]): Script => (t) => {
      const last = t.results.at(-1);
      if (last !== undefined && !/APPROVAL_PENDING/.test(last)) {
        seen.push(...t.results);
        return { kind: 'text', text: 'done' };
      }
      if (t.results.length > 20) return { kind: 'text', text: 'gave up' };
      return { kind: 'call', tool, args };
    };

    /**
     * Approves the next card when `when` says — `afterMs` after it appears (the operator takes
     * that long), or once the card has ended (`approval.resolved`: the host gave up and withdrew
     * it) or the host's run has. The returned function is given the host's run: when the host
     * ends before any card appears, it fails at once with what the host printed.
     */
    async function approveLater(when: { afterMs: number } | 'after-it-ended'): Promise<(run: Promise<HostRun>) => Promise<ApprovalCard>> {
      const op = await inst.operator();
      const cards: ApprovalCard[] = [];
      const resolved = new Set<string>();
      let wake: () => void = () => undefined;
      await op.subscribe((env) => {
        if (env.event.type === 'approval.added') cards.push(env.event.card);
        else if (env.event.type === 'approval.resolved') resolved.add(env.event.id);
        else return;
        wake();
      });
      return async (run) => {
        const ended = run.then(
          (r) => new Error(`the host ended (exit ${String(r.code)}) before any approval card appeared:\n${r.out}`),
          (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
        );
        try {
          while (cards.length === 0) {
            const early = await Promise.race([new Promise<void>((r) => (wake = r)), ended]);
            if (early instanceof Error && cards.length === 0) throw early;
          }
          const card = cards[0]!;
          if (when === 'after-it-ended') {
            let hostEnded = false;
            void ended.then(() => {
              hostEnded = true;
              wake();
            });
            while (!resolved.has(card.id) && !hostEnded) await new Promise<void>((r) => (wake = r));
          } else {
            await delay(when.afterMs); // the operator takes this long: the scenario itself, not a wait for the system
          }
          await op.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'approve', scope: 'once' } });
          return card;
        } finally {
          op.close();
        }
      };
    }

    it(`the installed ${host} is the recorded version (when it changes, this says how)`, () => {
      const installed = installedVersion(host);
      assert.equal(installed, RECORDED[host], `${host} changed: recorded ${RECORDED[host] ?? 'none'}, installed ${installed} — rerun this file and update test/e2e/fixtures/host-versions.json`);
    });

    it('calls a read tool and the model is shown the redacted result', { timeout: 300_000 }, async () => {
      await inst.startDaemon();
      try {
        const before = http.requests.length;
        const seen: string[] = [];
        const r = await d.run(once(d.tool('echo_read'), { q: 'hello-read' }, seen));
        assert.equal(r.code, 0, r.out);
        assert.equal(http.requests.length, before + 1, r.out);
        assert.match(seen.join('\n'), /hello-read/);
        assert.match(seen.join('\n'), /\[REDACTED/);
      } finally {
        await inst.stopDaemon();
      }
    });

    it('waits for an approval given after a few seconds', { timeout: 300_000 }, async () => {
      await inst.startDaemon();
      try {
        const before = http.requests.length;
        const seen: string[] = [];
        const approve = await approveLater({ afterMs: OPERATOR_DELAY_MS });
        const args = { title: 'approved after 3 s', idempotency_key: `k-${randomBytes(6).toString('hex')}` };
        const run = d.run(untilDecided(d.tool('gated_write'), args, seen));
        const [r, card] = await Promise.all([run, approve(run)]);
        assert.equal(r.code, 0, r.out);
        assert.equal(card.tool, 'gated_write');
        assert.equal(http.requests.length, before + 1, `${seen.join('\n')}\n${r.out}`);
        assert.match(seen.join('\n'), /approved after 3 s/);
      } finally {
        await inst.stopDaemon();
      }
    });

    it(`an approval given after its tool timeout (${HOST_TOOL_TIMEOUT_MS} ms) comes too late: the host gives up and cancels, the card is withdrawn, nothing runs`, { timeout: 300_000 }, async () => {
      // Measured: the hosts ask for progress but do not reset their tool timeout on it, so Postern's early
      // APPROVAL_PENDING never comes; keep the host's tool timeout above approval_timeout_seconds (docs/worked-example.md).
      await inst.startDaemon();
      try {
        const before = http.requests.length;
        const seen: string[] = [];
        const approve = await approveLater('after-it-ended');
        const args = { title: 'approved too late', idempotency_key: `k-${randomBytes(6).toString('hex')}` };
        const run = d.run(once(d.tool('gated_write'), args, seen));
        const [r, late] = await Promise.all([run, approve(run).then(() => 'approved', (e: Error & { code?: string }) => e.code ?? e.message)]);
        assert.equal(r.code, 0, r.out);
        assert.match(seen.join('\n'), d.timedOut);
        assert.equal(late, 'APPROVAL_NOT_FOUND', 'the host\'s cancellation withdrew the card');
        assert.equal(http.requests.length, before, 'nothing ran');
      } finally {
        await inst.stopDaemon();
      }
    });

    it('listed the tools in an earlier session, started while the daemon is down: the remembered tools are offered, a call waits for the daemon, the same call then runs without restarting the host', { timeout: 300_000 }, async () => {
      assert.equal(inst.daemon, null);
      assert.ok(existsSync(listings()), 'the earlier runs listed the tools with the daemon up');
      const before = http.requests.length;
      const echo = d.tool('echo_read');
      const offered: string[][] = [];
      const seen: string[] = [];
      let unavailable = 0;
      try {
        const r = await d.run(async (t) => {
          offered.push(t.tools.filter((n) => n.startsWith(d.tool(''))));
          const last = t.results.at(-1);
          if (last !== undefined && !/DAEMON_UNAVAILABLE/.test(last)) {
            seen.push(...t.results);
            return { kind: 'text', text: 'done' };
          }
          if (last !== undefined) {
            // The call did not run and may be made again once the daemon runs (its message says): the operator starts it.
            unavailable += 1;
            if (inst.daemon === null) await inst.startDaemon();
          }
          if (t.results.length >= 4) return { kind: 'text', text: 'gave up' };
          return t.tools.includes(echo) ? { kind: 'call', tool: echo, args: { q: 'remembered-read' } } : { kind: 'text', text: `no ${echo}` };
        });
        assert.equal(r.code, 0, r.out);
        assert.ok(offered[0]?.includes(echo), JSON.stringify(offered));
        assert.equal(unavailable, 1, `${JSON.stringify(offered)}\n${r.out}`);
        assert.equal(http.requests.length, before + 1, `${seen.join('\n')}\n${r.out}`);
        assert.match(seen.join('\n'), /remembered-read/);
      } finally {
        if (inst.daemon !== null) await inst.stopDaemon();
      }
    });

    it('never listed, started while the daemon is down: the daemon starts mid-run and the real tools appear without restarting the host', { timeout: 300_000, todo: NOT_YET[host]?.daemonUp ?? false }, async () => {
      assert.equal(inst.daemon, null);
      await forgetListings();
      const before = http.requests.length;
      const offered: string[][] = [];
      const seen: string[] = [];
      try {
        let called = false;
        const r = await d.run(async (t) => {
          offered.push(t.tools.filter((n) => n.startsWith(d.tool(''))));
          if (called) {
            seen.push(...t.results);
            return { kind: 'text', text: 'done' };
          }
          if (t.tools.includes(d.tool('echo_read'))) {
            called = true;
            return { kind: 'call', tool: d.tool('echo_read'), args: { q: 'after-restart' } };
          }
          // The model calls postern_status (as its description says) until the host offers the real tools.
          if (t.results.length < 8 && t.tools.includes(d.tool('postern_status'))) {
            if (inst.daemon === null) await inst.startDaemon();
            return { kind: 'call', tool: d.tool('postern_status'), args: {} };
          }
          return { kind: 'text', text: 'the tools did not appear' };
        });
        assert.equal(r.code, 0, r.out);
        assert.deepEqual(offered[0], [d.tool('postern_status')]);
        assert.ok(offered.some((o) => o.includes(d.tool('echo_read'))), JSON.stringify(offered));
        assert.equal(http.requests.length, before + 1, JSON.stringify(offered));
        assert.match(seen.join('\n'), /after-restart/);
      } finally {
        if (inst.daemon !== null) await inst.stopDaemon();
      }
    });

    // Codex does not act on tools/list_changed (the case above): what the user does instead, measured. The run that
    // started while the daemon was down keeps the stand-in to its end; once the daemon runs, `codex exec resume --last`
    // (a new Codex process, the same conversation) lists the tools again and is offered the real ones.
    const resume = d.resume;
    if (resume !== undefined) it('never listed, started while the daemon is down, then resumed once the daemon runs: the resumed conversation is offered the real tools', { timeout: 300_000 }, async () => {
      assert.equal(inst.daemon, null);
      await forgetListings();
      const before = http.requests.length;
      const status = d.tool('postern_status');
      const offered: string[][] = [];
      try {
        const first = await d.run((t) => {
          offered.push(t.tools.filter((n) => n.startsWith(d.tool(''))));
          return t.results.length === 0 ? { kind: 'call', tool: status, args: {} } : { kind: 'text', text: 'the operator must start the daemon' };
        });
        assert.equal(first.code, 0, first.out);
        assert.deepEqual(offered, [[status], [status]], 'the stand-in alone, for the whole run');
        await inst.startDaemon();
        const seen: string[] = [];
        let earlier: readonly string[] | null = null;
        const resumed = await resume((t) => {
          earlier ??= t.results;
          offered.push(t.tools.filter((n) => n.startsWith(d.tool(''))));
          if (t.results.length > earlier.length) {
            seen.push(...t.results.slice(earlier.length));
            return { kind: 'text', text: 'done' };
          }
          return t.tools.includes(d.tool('echo_read')) ? { kind: 'call', tool: d.tool('echo_read'), args: { q: 'after-resume' } } : { kind: 'text', text: 'the tools did not appear' };
        });
        assert.equal(resumed.code, 0, resumed.out);
        assert.match((earlier ?? []).join('\n'), /DAEMON_UNAVAILABLE/, 'the resumed run continues the first one\'s conversation');
        assert.ok(offered.at(-1)?.includes(d.tool('echo_read')), JSON.stringify(offered));
        assert.equal(http.requests.length, before + 1, JSON.stringify(offered));
        assert.match(seen.join('\n'), /after-resume/);
      } finally {
        if (inst.daemon !== null) await inst.stopDaemon();
      }
    });

    it('the canary secret is in nothing the fake model received', () => {
      assert.ok(received.length > 0);
      const all = received.join('\n');
      assert.ok(!all.includes(TOKEN), 'the token reached a model');
      assert.ok(!all.includes(TOKEN.slice(10)), 'part of the token reached a model');
    });
  });
}
