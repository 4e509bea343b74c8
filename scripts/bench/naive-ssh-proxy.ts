/**
 * The SSH baseline of scripts/bench/ssh.ts beside raw ssh2: what a user would
 * otherwise run — an MCP server on the same SDK that keeps one ssh2
 * connection open (key from its environment, host key compared with the
 * pinned fingerprint) and runs the same command per call: no vault, journal,
 * approval, output caps or redaction. One process per agent session, over
 * stdio.
 */
import { createHash } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import ssh2 from 'ssh2';
import type { ClientChannel } from 'ssh2';
import { z } from 'zod';

const { SSH_PORT, SSH_KEY, SSH_FINGERPRINT } = process.env;
const conn = new ssh2.Client();
await new Promise<void>((resolve, reject) => {
  conn.once('ready', resolve).once('error', reject);
  conn.on('connect', () => conn.setNoDelay(true));
  conn.connect({
    host: '127.0.0.1',
    port: Number(SSH_PORT),
    username: 'deploy',
    ...(SSH_KEY === undefined ? {} : { privateKey: SSH_KEY }),
    hostVerifier: (key: Buffer) => `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}` === SSH_FINGERPRINT,
  });
});

const run = (command: string) =>
  new Promise<{ content: { type: 'text'; text: string }[] }>((resolve, reject) => {
    conn.exec(command, (err: Error | undefined, stream: ClientChannel) => {
      if (err) return reject(err);
      let stdout = '';
      let stderr = '';
      let code: number | null = null;
      stream.on('data', (d: Buffer) => (stdout += d.toString('utf8'))).on('exit', (c: number | null) => (code = c));
      stream.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      stream.on('close', () => resolve({ content: [{ type: 'text', text: JSON.stringify({ exit_code: code, stdout, stderr }) }] }));
    });
  });

const server = new McpServer({ name: 'naive-ssh-proxy', version: '1.0.0' });
server.registerTool('echo_x', { description: 'Echo x.', inputSchema: z.object({}) }, () => run("'echo' 'x'"));
await server.connect(new StdioServerTransport());
