/**
 * How an SSH command's result becomes the agent's answer: exit 0 is success,
 * anything else is a TARGET_ERROR that still carries exit code, signal and
 * output; a declared output schema applies to stdout parsed as JSON (a
 * mismatch is OUTPUT_CONTRACT_MISMATCH, naming the field); secrets
 * printed by the remote are redacted before anything is shaped.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { parseCatalog, type Revision } from '../../../src/contracts/index.js';
import { createRedactor } from '../../../src/redaction/index.js';
import { shapeResult } from '../../../src/daemon/pipeline/stages/outcome/result.js';
import type { Trail } from '../../../src/daemon/pipeline/trail.js';
import type { SshResult } from '../../../src/executors/ssh/index.js';

const SECRET = 'ssh-result-canary-5b1e0c';
const FP = `SHA256:${'A'.repeat(43)}`;

function revision(output?: Record<string, unknown>): Revision {
  const text = stringify({
    targets: { box: { ssh: { host: 'box.example', port: 22, user: 'deploy', credential: 'k', host_key: FP } } },
    tools: {
      run: {
        description: 'Run.',
        effect: 'read',
        approval: 'none',
        revisions: [{ revision: 1, input: { type: 'object', properties: {} }, ...(output === undefined ? {} : { output }), ssh: { target: 'box', argv: ['uptime'] } }],
      },
    },
  });
  return parseCatalog(text, 'catalog.yaml').tools.get('run')!.current;
}

const trail = { callId: 'call-1', currentRevision: 1 } as unknown as Trail;
const redactor = createRedactor([{ name: 'k', bytes: Buffer.from(SECRET) }]);

function ssh(over: Partial<SshResult>): SshResult {
  return { exit_code: 0, signal: null, stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false, stdout_truncated_at: null, stderr_truncated_at: null, host_key_fingerprint: FP, side_effect_started: true, ...over };
}

const shape = (r: SshResult, rev = revision()) => shapeResult({ kind: 'ssh', result: r }, rev, redactor, trail);

describe('SSH results', () => {
  it('exit 0 is success with every fact', () => {
    const s = shape(ssh({ stdout: 'up 3 days\n', stderr: 'note\n' }));
    assert.equal(s.status, 'success');
    assert.equal(s.result.isError, undefined);
    assert.deepEqual(s.result.structuredContent, {
      exit_code: 0,
      signal: null,
      stdout: 'up 3 days\n',
      stderr: 'note\n',
      stdout_truncated: false,
      stderr_truncated: false,
      host_key_fingerprint: FP,
      result_revision: 1,
      call_id: 'call-1',
    });
  });

  const failures: [string, Partial<SshResult>, RegExp][] = [
    ['a non-zero exit', { exit_code: 3 }, /exited with status 3/],
    ['a signal', { exit_code: null, signal: 'KILL' }, /signal KILL/],
    ['a command cut off at both caps', { exit_code: null, stdout_truncated: true, stderr_truncated: true }, /cut off/],
  ];
  for (const [what, over, message] of failures) {
    it(`${what} is a TARGET_ERROR that keeps the facts, effect started`, () => {
      const s = shape(ssh({ ...over, stdout: 'partial' }));
      assert.equal(s.status, 'error');
      assert.equal(s.errorCode, 'TARGET_ERROR');
      const f = s.result.structuredContent as Record<string, unknown>;
      assert.equal(f['side_effect_started'], true);
      assert.match(String(f['message']), message);
      assert.equal(f['stdout'], 'partial');
      assert.equal(f['exit_code'], over.exit_code);
    });
  }

  it('a secret the remote printed is redacted in stdout, stderr and the summary', () => {
    const s = shape(ssh({ stdout: `key=${SECRET}\n`, stderr: Buffer.from(SECRET).toString('base64') }));
    const text = JSON.stringify(s.result);
    assert.ok(!text.includes(SECRET));
    assert.ok(!text.includes(Buffer.from(SECRET).toString('base64')));
    assert.match(text, /\[REDACTED:k\]/);
  });

  it('with an output schema, stdout must be matching JSON and comes back as stdout_json', () => {
    const rev = revision({ type: 'object', properties: { load: { type: 'number' } }, required: ['load'] });
    const ok = shape(ssh({ stdout: '{"load":0.5}' }), rev);
    assert.equal(ok.status, 'success');
    assert.deepEqual((ok.result.structuredContent as Record<string, unknown>)['stdout_json'], { load: 0.5 });
    for (const [stdout, field] of [['not json', 'stdout'], ['{"load":"high"}', 'stdout_json.load']] as const) {
      const bad = shape(ssh({ stdout }), rev);
      assert.equal(bad.errorCode, 'OUTPUT_CONTRACT_MISMATCH');
      const f = bad.result.structuredContent as Record<string, unknown>;
      assert.match(String(f['message']), /output schema of revision 1/);
      assert.deepEqual([f['field'], f['side_effect_started'], f['planned_revision'], f['required_action']], [field, true, 1, 'refresh_tool_list_and_do_not_repeat']);
    }
  });

  it('stdout nested 5,000 deep is kept as text: the facts of the run come back, the secret redacted', () => {
    const deep = `${'['.repeat(5000)}"${SECRET}"${']'.repeat(5000)}`;
    const rev = revision({ type: 'array', items: { type: 'string' } });
    const s = shape(ssh({ stdout: deep }), rev);
    assert.equal(s.errorCode, 'OUTPUT_CONTRACT_MISMATCH');
    const facts = s.result.structuredContent as Record<string, unknown>;
    assert.equal(facts['exit_code'], 0);
    assert.ok(!JSON.stringify(s.result).includes(SECRET));
    assert.equal(String(facts['stdout']).length, deep.length - SECRET.length + '[REDACTED:k]'.length);
  });

  it('a secret kept past the stdout cap is redacted whole, then cut at the cap', () => {
    const stdout = `${'.'.repeat(10)}${SECRET}${'.'.repeat(40)}`;
    for (let at = 10; at < 10 + SECRET.length; at++) {
      const s = shape(ssh({ exit_code: null, stdout, stdout_truncated: true, stdout_truncated_at: at }));
      assert.equal((s.result.structuredContent as Record<string, unknown>)['stdout'], '.'.repeat(10));
    }
    const s = shape(ssh({ exit_code: null, stdout, stdout_truncated: true, stdout_truncated_at: 40 }));
    assert.equal((s.result.structuredContent as Record<string, unknown>)['stdout'], `${'.'.repeat(10)}[REDACTED:k]${'.'.repeat(40 - 10 - SECRET.length)}`);
  });
});
