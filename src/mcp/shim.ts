/**
 * `postern mcp`: the stdio MCP endpoint an agent host launches. It holds no
 * secrets and makes no decisions: it relays newline-delimited JSON-RPC between
 * stdio and the daemon's agent socket. When the daemon is not there (not
 * started, or gone mid-session), it answers by itself — every `tools/call`
 * gets an `isError` result saying what the human must run — and reconnects on
 * the next request, replaying the client's `initialize` so the session
 * continues. It imports nothing from the vault, executors or journals.
 */
import { connect, type Socket } from 'node:net';
import { ErrorCodes } from '../protocol/errors.js';

const MAX_LINE = 8 * 1024 * 1024;
const FALLBACK_PROTOCOL = '2025-11-25';

type Json = Record<string, unknown>;

export interface ShimOptions {
  readonly socketPath: string;
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  readonly version: string;
}

function lineSplitter(onLine: (line: string) => void): (chunk: Buffer) => void {
  let buf = '';
  return (chunk) => {
    buf += chunk.toString('utf8');
    if (buf.length > MAX_LINE && !buf.includes('\n')) buf = ''; // an unbounded line is dropped, not buffered
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim() !== '') onLine(line);
    }
  };
}

function tryConnect(path: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

export function unavailableResult(): Json {
  const message = 'the Postern daemon is not running or not reachable: ask the operator to run `postern up` (or `postern daemon`)';
  return {
    isError: true,
    content: [{ type: 'text', text: `DAEMON_UNAVAILABLE: ${message} (side effect started: no)` }],
    structuredContent: { error_code: 'DAEMON_UNAVAILABLE', message, side_effect_started: false, required_action: ErrorCodes.DAEMON_UNAVAILABLE.action },
  };
}

export async function runShim(opts: ShimOptions): Promise<void> {
  const write = (msg: Json): void => {
    opts.output.write(`${JSON.stringify(msg)}\n`);
  };
  let socket: Socket | null = null;
  let initialize: string | null = null;
  let initialized = false;

  /** Answers a client message while no daemon is reachable. */
  const answerAlone = (msg: Json): void => {
    if (!('id' in msg) || typeof msg['method'] !== 'string') return; // notifications and stray responses
    const id = msg['id'];
    switch (msg['method']) {
      case 'initialize': {
        const asked = (msg['params'] as Json | undefined)?.['protocolVersion'];
        write({ jsonrpc: '2.0', id, result: { protocolVersion: typeof asked === 'string' ? asked : FALLBACK_PROTOCOL, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'postern', version: opts.version }, instructions: 'The Postern daemon is not running: tools are unavailable until the operator starts it (`postern up`).' } });
        return;
      }
      case 'ping':
        write({ jsonrpc: '2.0', id, result: {} });
        return;
      case 'tools/list':
        write({ jsonrpc: '2.0', id, result: { tools: [] } });
        return;
      case 'tools/call':
        write({ jsonrpc: '2.0', id, result: unavailableResult() });
        return;
      default:
        write({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } });
    }
  };

  const attach = (s: Socket): void => {
    socket = s;
    s.on('data', (d: Buffer) => opts.output.write(d));
    s.on('error', () => undefined);
    s.on('close', () => {
      if (socket === s) socket = null;
    });
    s.write(`${JSON.stringify({ postern_shim: 1, pid: process.pid })}\n`);
  };

  /** Reconnects and replays the session's initialize, swallowing the daemon's answer to it. */
  const reconnect = async (): Promise<boolean> => {
    const s = await tryConnect(opts.socketPath);
    if (s === null) return false;
    if (initialize !== null) {
      const id = (JSON.parse(initialize) as Json)['id'];
      await new Promise<void>((resolve) => {
        const onLine = lineSplitter((line) => {
          try {
            if ((JSON.parse(line) as Json)['id'] === id) {
              s.off('data', feed);
              resolve();
            }
          } catch {
            // keep waiting for the initialize answer
          }
        });
        const feed = (d: Buffer): void => onLine(d);
        s.on('data', feed);
        s.once('close', () => resolve());
        s.write(`${JSON.stringify({ postern_shim: 1, pid: process.pid })}\n${initialize}\n`);
        if (initialized) s.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
      });
      if (s.destroyed) return false;
      socket = s;
      s.on('data', (d: Buffer) => opts.output.write(d));
      s.on('error', () => undefined);
      s.on('close', () => {
        if (socket === s) socket = null;
      });
      return true;
    }
    attach(s);
    return true;
  };

  const first = await tryConnect(opts.socketPath);
  if (first !== null) attach(first);

  let queue = Promise.resolve();
  const handleLine = async (line: string): Promise<void> => {
    let msg: Json | null = null;
    try {
      const v: unknown = JSON.parse(line);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) msg = v as Json;
    } catch {
      msg = null;
    }
    if (msg?.['method'] === 'initialize') initialize = line;
    if (msg?.['method'] === 'notifications/initialized') initialized = true;
    if (socket === null && msg !== null && 'id' in msg && msg['method'] !== 'initialize') await reconnect();
    if (socket === null && msg?.['method'] === 'initialize') {
      const s = await tryConnect(opts.socketPath);
      if (s !== null) attach(s);
    }
    const s: Socket | null = socket;
    if (s !== null) {
      s.write(`${line}\n`);
    } else if (msg !== null) {
      answerAlone(msg);
    }
  };
  opts.input.on('data', lineSplitter((line) => {
    queue = queue.then(() => handleLine(line));
  }));
  await new Promise<void>((resolve) => {
    opts.input.on('end', () => {
      void queue.then(() => {
        const s: Socket | null = socket;
        s?.end();
        resolve();
      });
    });
  });
}
