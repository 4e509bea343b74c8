/**
 * A reader that stops early (`postern catalog show | head -1`) closes the
 * pipe mid-output: the CLI stops quietly, with no stack trace.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { childEnv, CLI, cliSandbox, type CliSandbox } from '../helpers/cli.js';

describe('CLI output into a closed pipe', () => {
  let sb: CliSandbox;

  before(async () => {
    sb = await cliSandbox();
    await mkdir(sb.home, { mode: 0o700 });
    // Far more output than a pipe buffers, so most of it is written after the reader left.
    const tools = Object.fromEntries(
      Array.from({ length: 1500 }, (_, i) => [`tool_${i}`, { description: 'Read.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'api', method: 'GET', path: `/p/${i}` } }] }]),
    );
    await writeFile(join(sb.home, 'catalog.yaml'), stringify({ targets: { api: { http: { origin: 'https://api.example.com', credential: 'api-token', auth: 'bearer' } } }, tools }), { mode: 0o600 });
  });
  after(() => sb.cleanup());

  it('stops quietly when the reader closes after the first line', async () => {
    const child = spawn(process.execPath, [CLI, 'catalog', 'show'], { env: childEnv(sb.home), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    let first = '';
    await new Promise<void>((resolve) => {
      child.stdout.once('data', (d: Buffer) => {
        first = d.toString('utf8');
        child.stdout.destroy();
        resolve();
      });
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.match(first, /status: unaccepted/);
    assert.equal(stderr, '', 'nothing on stderr: no EPIPE stack trace');
    assert.equal(code, 0);
  });
});
