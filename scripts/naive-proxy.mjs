// The baseline of scripts/bench/http-calls.ts: what a user would otherwise run — an MCP server on
// the same SDK that makes the same request with the token from its environment: no vault, no
// journal, no approval, no idempotency. One process per agent session, over stdio.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { Agent, request } from 'undici';
import { z } from 'zod';

const origin = process.env.TARGET_ORIGIN;
const headers = { authorization: `Bearer ${process.env.TARGET_TOKEN}` };
const dispatcher = new Agent();
const server = new McpServer({ name: 'naive-proxy', version: '1.0.0' });
const answer = async (res) => ({ content: [{ type: 'text', text: JSON.stringify({ status: res.statusCode, body: await res.body.json() }) }] });
server.registerTool('get_json', { description: 'Read JSON.', inputSchema: z.object({}) }, async () =>
  answer(await request(`${origin}/json`, { headers, dispatcher })),
);
server.registerTool('create_note', { description: 'Create a note.', inputSchema: z.object({ title: z.string(), idempotency_key: z.string() }) }, async ({ title, idempotency_key }) =>
  answer(await request(`${origin}/json`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': idempotency_key }, body: JSON.stringify({ title }), dispatcher })),
);
await server.connect(new StdioServerTransport());
