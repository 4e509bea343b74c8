/**
 * Fake model endpoints on loopback, one per model API an agent host speaks:
 * the Anthropic Messages API (Claude Code, `ANTHROPIC_BASE_URL`), the OpenAI
 * Responses API (Codex, a custom model provider) and the Gemini API (Gemini
 * CLI, `GOOGLE_GEMINI_BASE_URL`), each streaming the way its host asks.
 *
 * What the model "decides" is a script: each turn sees the tool names the host
 * offered and the tool results it sent back, and answers with a tool call or
 * text. Every request body is recorded, append-only, so a test can search
 * everything the model was ever shown (the canary search).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

/** What the host showed the model this turn. */
export interface Turn {
  /** The names of the tools offered (as the host names them, e.g. `mcp__postern__echo_read`). */
  readonly tools: readonly string[];
  /** The text of every tool result in the conversation so far, oldest first. */
  readonly results: readonly string[];
  /** The whole request body. */
  readonly body: string;
}

export type Reply =
  | { readonly kind: 'call'; readonly tool: string; readonly args: Json }
  | { readonly kind: 'text'; readonly text: string };

/** The model's next answer; it may wait (e.g. for the test to change the world between two turns). */
export type Script = (turn: Turn) => Reply | Promise<Reply>;

export interface FakeModel {
  readonly url: string;
  /** Every request body received, in order (never trimmed). */
  readonly received: readonly string[];
  close(): Promise<void>;
}

type Api = 'anthropic' | 'openai-responses' | 'gemini';

const texts = (v: unknown, out: string[] = []): string[] => {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) texts(x, out);
  else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) texts(x, out);
  return out;
};

/** The turn, read from one request of each API. */
function turnOf(api: Api, body: string): Turn {
  let req: Json = {};
  try {
    req = JSON.parse(body) as Json;
  } catch {
    // not JSON: no tools, no results
  }
  const tools: string[] = [];
  const results: string[] = [];
  switch (api) {
    case 'anthropic': {
      for (const t of (req['tools'] as Json[] | undefined) ?? []) if (typeof t['name'] === 'string') tools.push(t['name']);
      for (const m of (req['messages'] as Json[] | undefined) ?? []) {
        const content = Array.isArray(m['content']) ? (m['content'] as Json[]) : [];
        for (const c of content) if (c['type'] === 'tool_result') results.push(texts(c['content']).join('\n'));
      }
      break;
    }
    case 'openai-responses': {
      for (const t of (req['tools'] as Json[] | undefined) ?? []) {
        if (typeof t['name'] === 'string') tools.push(t['name']);
        // Codex may group MCP tools in a namespace
        for (const inner of (t['tools'] as Json[] | undefined) ?? []) if (typeof inner['name'] === 'string') tools.push(`${String(t['name'])}.${inner['name']}`);
      }
      for (const item of (req['input'] as Json[] | undefined) ?? []) if (item['type'] === 'function_call_output' || item['type'] === 'custom_tool_call_output') results.push(texts(item['output']).join('\n'));
      break;
    }
    case 'gemini': {
      for (const group of (req['tools'] as Json[] | undefined) ?? []) for (const f of (group['functionDeclarations'] as Json[] | undefined) ?? []) if (typeof f['name'] === 'string') tools.push(f['name']);
      for (const c of (req['contents'] as Json[] | undefined) ?? []) for (const p of (c['parts'] as Json[] | undefined) ?? []) if (p['functionResponse'] !== undefined) results.push(JSON.stringify(p['functionResponse']));
      break;
    }
  }
  return { tools, results, body };
}

let calls = 0;
const callId = (): string => `call_${++calls}_${Date.now().toString(36)}`;

function sse(res: ServerResponse, events: readonly (readonly [string | null, Json])[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) res.write(`${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`);
  res.end();
}

function anthropic(res: ServerResponse, reply: Reply, stream: boolean): void {
  const block = reply.kind === 'call' ? { type: 'tool_use', id: `toolu_${callId()}`, name: reply.tool, input: reply.args } : { type: 'text', text: reply.text };
  const stop = reply.kind === 'call' ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: 10, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = { id: `msg_${callId()}`, type: 'message', role: 'assistant', model: 'fake-model', stop_sequence: null };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...message, content: [block], stop_reason: stop, usage }));
    return;
  }
  const start = reply.kind === 'call' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta = reply.kind === 'call' ? { type: 'input_json_delta', partial_json: JSON.stringify(reply.args) } : { type: 'text_delta', text: reply.text };
  sse(res, [
    ['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: start }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

function openaiResponses(res: ServerResponse, reply: Reply): void {
  const id = `resp_${callId()}`;
  // A tool offered inside a namespace (Codex groups each MCP server's tools) is called by name within it.
  const dot = reply.kind === 'call' ? reply.tool.lastIndexOf('.') : -1;
  const named = reply.kind === 'call' && dot > 0 ? { namespace: reply.tool.slice(0, dot), name: reply.tool.slice(dot + 1) } : { name: reply.kind === 'call' ? reply.tool : '' };
  const item = reply.kind === 'call'
    ? { type: 'function_call', id: `fc_${callId()}`, call_id: callId(), ...named, arguments: JSON.stringify(reply.args), status: 'completed' }
    : { type: 'message', id: `msg_${callId()}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 20 };
  sse(res, [
    ['response.created', { type: 'response.created', response: { id, status: 'in_progress', output: [] } }],
    ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
    ['response.completed', { type: 'response.completed', response: { id, status: 'completed', output: [item], usage } }],
  ]);
}

function gemini(res: ServerResponse, reply: Reply, stream: boolean): void {
  const part = reply.kind === 'call' ? { functionCall: { name: reply.tool, args: reply.args } } : { text: reply.text };
  const chunk = { candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 10, totalTokenCount: 20 }, modelVersion: 'fake-model' };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(chunk));
    return;
  }
  sse(res, [[null, chunk]]);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** Starts a fake model endpoint for `api` on 127.0.0.1, answering by `script`. */
export async function startFakeModel(api: Api, script: Script): Promise<FakeModel> {
  const received: string[] = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      received.push(`${req.method ?? ''} ${req.url ?? ''}\n${body}`);
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method !== 'POST') return void res.writeHead(404).end('{}');
      if (api === 'anthropic' && path.endsWith('/count_tokens')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":10}');
      return Promise.resolve(script(turnOf(api, body))).then((reply) => {
      switch (api) {
        case 'anthropic':
          return anthropic(res, reply, /"stream"\s*:\s*true/.test(body));
        case 'openai-responses':
          return openaiResponses(res, reply);
        case 'gemini':
          return gemini(res, reply, path.includes('streamGenerateContent'));
      }
      });
    }).catch(() => res.writeHead(500).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
