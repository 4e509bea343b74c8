/**
 * `postern mcp`: the stdio MCP endpoint an agent host launches. It holds no
 * secrets and makes no decisions: it relays newline-delimited JSON-RPC between
 * stdio and the daemon's agent socket. When the daemon is not there (not
 * started, or gone mid-session), it answers by itself — every `tools/call`
 * gets an `isError` result saying what the human must run — and reconnects on
 * the next request, replaying the client's `initialize` so the session
 * continues. It imports nothing from the vault, executors or journals.
 *
 * While the daemon is away, the listing holds one tool, `postern_status`,
 * whose description (and result, when called) tells the agent what the
 * operator must run, for which home; the initialize result's `instructions`
 * say the same. Clients show tool descriptions to the model; not all of them
 * show `instructions`. Once a session that was given the stand-in listing
 * reaches the daemon again, the shim sends `notifications/tools/list_changed`
 * so the client lists the real tools.
 *
 * The shim remembers the revisions (and toolset) of the daemon's last
 * `tools/list` it relayed, and declares them in the hello of each reconnect
 * (src/protocol/shim-hello.ts): a daemon restarted meanwhile then knows what
 * the client planned against, refuses or adapts its calls by the catalog's
 * policies, and tells it to list again when the tools changed.
 *
 * It also remembers the daemon's last full listing on disk
 * (remembered-listing.ts): while the daemon is away the stand-in lists those
 * tools beside `postern_status`, so a host that lists once per session (and
 * ignores `tools/list_changed`) has the real tools once the daemon runs; a
 * call of one before then is DAEMON_UNAVAILABLE, never run.
 *
 * Invariants:
 * - every client request gets exactly one answer, never a hang: the shim
 *   remembers which requests the daemon has not answered yet, and when the
 *   daemon connection drops it answers them itself — a `tools/call` that was
 *   in flight is reported as possibly started (the daemon journals it and a
 *   retry with the same idempotency key never runs twice); once the client
 *   has closed its input, nothing is answered any more, and closing the
 *   daemon connection is how the daemon learns the client gave up (it
 *   cancels that session's waiting calls);
 * - `notifications/cancelled` is forwarded like any line, so the daemon
 *   cancels the call (and its approval card) the client gave up on;
 * - client lines are split on bytes and forwarded byte for byte, so a
 *   multi-byte character that straddles two reads arrives intact; invalid
 *   UTF-8 is never "repaired" into U+FFFD (it is refused, with its id);
 * - the daemon's bytes are relayed as they come; the shim's own answers never
 *   land inside one of its lines;
 * - answers the shim makes itself fit the request's protocol era (2026-07-28
 *   results carry `resultType`, and a stand-in listing is not cacheable);
 * - a line that is not UTF-8 or not JSON (-32700), a request whose envelope
 *   the SDK would drop (`params` an array or `null`…), or a `tools/call`
 *   without a string name or with arguments that are not an object (-32602)
 *   is answered here with the daemon's own rule (`protocol/jsonrpc-screen.ts`),
 *   daemon or no daemon, and never forwarded;
 * - a client line longer than the daemon accepts is not forwarded; it is
 *   answered (when its id can be found) and discarded, with bounded memory;
 * - MCP tasks live in the daemon's session and end with its connection: while
 *   the daemon is away (or when it went away mid-request), a task-augmented
 *   `tools/call` is a JSON-RPC error (DAEMON_UNAVAILABLE in `data`; the
 *   client expects a CreateTaskResult, not a tool result), `tasks/get`,
 *   `tasks/result` and `tasks/cancel` are -32602 TASK_NOT_FOUND, and
 *   `tasks/list` is empty.
 */
import { connect, type Socket } from 'node:net';
import { oversizedAnswer, SHIM_LINE_LIMIT } from '../protocol/agent-limits.js';
import { idFromEdges, screenBytes } from '../protocol/jsonrpc-screen.js';
import { encodeLine, lineSplitter, type Oversized } from '../protocol/ndjson.js';
import { encodeHello, listingOf, type RelayedListing } from '../protocol/shim-hello.js';
import { Listens } from './listens.js';
import { ListingMemory } from './remembered-listing.js';
import { asksForTask, ClientOutput, isModern, StandIn, STATUS_TOOL, type Json, type Owed } from './stand-in.js';

/** The longest client line forwarded: the ceiling of the one size rule; the daemon applies its configured limit. */
const MAX_CLIENT_LINE_BYTES = SHIM_LINE_LIMIT;
/** Daemon lines are relayed as they come; longer ones than this are not parsed (their id is read from the edges). */
const MAX_TRACKED_LINE_BYTES = 16 * 1024 * 1024;
/** While the client has listens open, the start of each daemon line is held this long to see whether it ends one. */
const HELD_HEAD_BYTES = 4096;

interface ShimOptions {
  readonly socketPath: string;
  /** The Postern home, named in what the agent is told while the daemon is away. */
  readonly home?: string;
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  readonly version: string;
  /** Where the daemon's last listing is remembered (remembered-listing.ts), or null for no memory. */
  readonly memoryPath?: string | null;
}

function tryConnect(path: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

const isRequest = (m: Json | null): m is Json => m !== null && 'id' in m && typeof m['method'] === 'string';
const isResponse = (m: Json | null): m is Json => m !== null && 'id' in m && m['method'] === undefined && ('result' in m || 'error' in m);
const idKey = (id: unknown): string => JSON.stringify(id ?? null);

/** A `tools/call` of the stand-in tool. */
function isStatusCall(m: Json): boolean {
  const params = m['params'];
  return m['method'] === 'tools/call' && typeof params === 'object' && params !== null && (params as Json)['name'] === STATUS_TOOL;
}

function parseObject(line: string | Buffer): Json | null {
  try {
    const v: unknown = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

/** One client session of the shim: its daemon connection (when there is one) and what it owes the client. */
class ShimSession {
  readonly #opts: ShimOptions;
  readonly #out: ClientOutput;
  readonly #standIn: StandIn;
  #socket: Socket | null = null;
  /** The client closed its side: nothing is answered any more, and the daemon sees the session end. */
  #clientGone = false;
  #initialize: Buffer | null = null;
  #initialized = false;
  /** Client requests sent to the daemon and not answered yet, by id. */
  readonly #pending = new Map<string, Owed>();
  /** The client's open `subscriptions/listen` requests (2026-07-28): they outlive daemon connections. */
  readonly #listens = new Listens();
  /** The daemon's last full tools/list relayed to the client: declared in the hello of every reconnect. */
  #relayed: RelayedListing | null = null;
  readonly #memory: ListingMemory;

  constructor(opts: ShimOptions) {
    this.#opts = opts;
    this.#out = new ClientOutput(opts.output);
    const memory = new ListingMemory(opts.memoryPath ?? null, opts.socketPath, STATUS_TOOL);
    this.#memory = memory;
    this.#standIn = new StandIn(this.#out, {
      home: opts.home,
      version: opts.version,
      recall: () => memory.recall(),
      planned: (tools) => (this.#relayed = listingOf({ tools }) ?? this.#relayed),
    });
  }

  async connect(): Promise<void> {
    const first = await tryConnect(this.#opts.socketPath);
    if (first !== null) this.#attach(first);
  }

  /** A client line: answered here when the screen refuses it, else forwarded byte for byte. */
  async line(line: Buffer): Promise<void> {
    // What the daemon's screen refuses is answered here by the same rule, daemon or no daemon.
    const verdict = screenBytes(line);
    if (verdict.kind === 'answer') return this.#out.write(verdict.response);
    if (verdict.kind === 'drop') return;
    const msg = verdict.message as Json;
    this.#note(msg, line);
    if (this.#socket === null && isRequest(msg)) {
      if (msg['method'] === 'initialize') {
        const s = await tryConnect(this.#opts.socketPath);
        if (s !== null) this.#attach(s);
      } else {
        await this.#reconnect();
      }
    }
    const s: Socket | null = this.#socket;
    const up = s !== null && !s.destroyed;
    if (up && isRequest(msg) && isStatusCall(msg)) return this.#standIn.statusWhileUp(msg['id'], msg['params']);
    // A listen is held by the shim, not owed by one connection: it stays open when the daemon goes away.
    const held = isRequest(msg) && msg['method'] === 'subscriptions/listen' && this.#listens.add(msg, line);
    if (up) {
      if (isRequest(msg) && !held) this.#pending.set(idKey(msg['id']), { id: msg['id'], method: String(msg['method']), modern: isModern(msg['params']), task: asksForTask(msg) });
      s.write(Buffer.concat([line, Buffer.from('\n')]));
    } else if (isRequest(msg)) {
      this.#standIn.alone(msg['id'], String(msg['method']), msg['params']);
    }
  }

  /** A client line too long to forward: answer it if we can tell which request it was. */
  oversized(o: Oversized): void {
    const answer = oversizedAnswer(o, MAX_CLIENT_LINE_BYTES);
    if (answer !== null) this.#out.write(answer);
  }

  /**
   * The client gave up on whatever it still waited for: the daemon cancels
   * those calls when the connection closes (their approval cards leave the
   * queue); they are not reported as lost.
   */
  end(): void {
    this.#clientGone = true;
    this.#socket?.end();
  }

  /** What the session must remember of a client line: its initialize (replayed on reconnect) and cancellations. */
  #note(msg: Json | null, line: Buffer): void {
    if (msg?.['method'] === 'initialize') this.#initialize = line;
    if (msg?.['method'] === 'notifications/initialized') this.#initialized = true;
    if (msg?.['method'] === 'notifications/cancelled') {
      const rid = (msg['params'] as Json | undefined)?.['requestId'];
      if (rid !== undefined) this.#pending.delete(idKey(rid));
      if (rid !== undefined) this.#listens.cancel(rid);
    }
  }

  /** A relay for one daemon connection: bytes go to the client as they come; a splitter notes which requests they answer. */
  #forwarder(): (chunk: Buffer) => void {
    const track = lineSplitter(
      MAX_TRACKED_LINE_BYTES,
      (line) => {
        if (this.#pending.size === 0) return;
        const m = parseObject(line);
        if (!isResponse(m)) return;
        const asked = this.#pending.get(idKey(m['id']));
        if (asked?.method === 'tools/list' && 'result' in m) {
          this.#relayed = listingOf(m['result']) ?? this.#relayed;
          this.#memory.remember(m['result']);
        }
        this.#pending.delete(idKey(m['id']));
      },
      (o) => {
        const id = idFromEdges(o);
        if (id !== undefined) this.#pending.delete(idKey(id));
      },
    );
    // The bytes go to the client first: noting what they answer (a whole tools/list is parsed for
    // the reconnect hello) is the shim's bookkeeping, not on the client's path. While listens are
    // open, a short line that ends one (the daemon stopping) is kept from the client.
    const relay = new HeldRelay(this.#out, () => this.#listens.size > 0, (line) => !this.#listens.isClosingResult(parseObject(line)));
    return (chunk) => {
      relay.push(chunk);
      track(chunk);
    };
  }

  /** Makes `s` the daemon connection; when it closes, every request it still owed is answered here (unless the client left first). */
  #adopt(s: Socket): void {
    this.#socket = s;
    s.on('close', () => {
      if (this.#socket !== s) return;
      this.#socket = null;
      this.#out.endBrokenLine();
      const owed = [...this.#pending.values()];
      this.#pending.clear();
      if (!this.#clientGone) this.#standIn.lost(owed);
    });
  }

  #hello(): string {
    return encodeHello(process.pid, this.#relayed);
  }

  #attach(s: Socket): void {
    s.on('data', this.#forwarder());
    s.on('error', () => undefined);
    this.#adopt(s);
    s.write(this.#hello());
  }

  /**
   * Reconnects and replays the session's initialize and open listens,
   * swallowing the daemon's answers to them; then tells the client to list
   * again: a 2025 session once it was given the stand-in listing (a changed
   * catalog the daemon tells it itself, from the hello), and every listen
   * that asked for tool changes (its subscription is replayed only after the
   * hello, so the daemon could not tell it).
   */
  async #reconnect(): Promise<void> {
    const s = await tryConnect(this.#opts.socketPath);
    if (s === null) return;
    const init = this.#initialize;
    if (init === null && this.#listens.size === 0) return this.#attach(s);
    if (!(await this.#replay(s, init)) || s.destroyed) {
      s.destroy();
      return;
    }
    this.#adopt(s);
    if (this.#standIn.listed && init !== null) this.#out.write({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    this.#standIn.listed = false;
    for (const notice of this.#listens.toolsChanged()) this.#out.write(notice);
  }

  /**
   * Sends the hello, the replayed initialize and the open listens on `s`; true
   * once the daemon accepted the initialize and answered every listen. Up to
   * then, lines are the shim's own; the bytes after are the client's.
   */
  #replay(s: Socket, init: Buffer | null): Promise<boolean> {
    const initId = init === null ? undefined : idKey(parseObject(init)?.['id']);
    const listens = this.#listens.replay();
    const forward = this.#forwarder();
    let ready = false;
    let initOk = init === null;
    let answered: (ok: boolean) => void = () => undefined;
    const replayed = new Promise<boolean>((resolve) => (answered = resolve));
    const replayLines = lineSplitter(MAX_TRACKED_LINE_BYTES, (line) => {
      if (ready) return;
      const m = parseObject(line);
      if (initId !== undefined && isResponse(m) && idKey(m['id']) === initId) {
        if ('error' in m) {
          ready = true;
          return answered(false);
        }
        initOk = true;
      }
      const listen = Listens.answers(m, listens.ids);
      if (listen !== undefined) listens.ids.delete(listen);
      if (initOk && listens.ids.size === 0) {
        ready = true;
        answered(true);
      }
    });
    s.on('data', (d: Buffer) => {
      let start = 0;
      while (!ready && start < d.length) {
        const nl = d.indexOf(0x0a, start);
        const stop = nl === -1 ? d.length : nl + 1;
        replayLines(d.subarray(start, stop));
        start = stop;
      }
      if (ready && start < d.length) forward(d.subarray(start));
    });
    s.on('error', () => undefined);
    s.once('close', () => answered(false));
    const opening = init === null ? [] : [init, Buffer.from(`\n${this.#initialized ? encodeLine({ jsonrpc: '2.0', method: 'notifications/initialized' }) : ''}`)];
    s.write(Buffer.concat([Buffer.from(this.#hello()), ...opening, ...listens.lines.flatMap((l) => [l, Buffer.from('\n')])]));
    return replayed;
  }
}

/**
 * Daemon bytes to the client as they come — except, when `holding()`, the
 * start of each line (up to HELD_HEAD_BYTES) waits until the shim can see
 * whether `pass(line)` lets it through; a longer line is relayed as it comes.
 */
class HeldRelay {
  readonly #out: ClientOutput;
  readonly #holding: () => boolean;
  readonly #pass: (line: Buffer) => boolean;
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The current line is being relayed as it comes. */
  #through = false;

  constructor(out: ClientOutput, holding: () => boolean, pass: (line: Buffer) => boolean) {
    this.#out = out;
    this.#holding = holding;
    this.#pass = pass;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#heldBytes === 0 && !this.#through && !this.#holding()) {
      this.#out.relay(chunk);
      this.#through = chunk[chunk.length - 1] !== 0x0a;
      return;
    }
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl + 1;
      const piece = chunk.subarray(start, end);
      start = end;
      if (this.#through || (this.#heldBytes === 0 && !this.#holding())) {
        this.#out.relay(piece);
        this.#through = nl === -1;
        continue;
      }
      this.#held.push(Buffer.from(piece));
      this.#heldBytes += piece.length;
      if (nl === -1 && this.#heldBytes <= HELD_HEAD_BYTES) continue;
      const head = Buffer.concat(this.#held);
      this.#held = [];
      this.#heldBytes = 0;
      this.#through = nl === -1;
      if (this.#through || this.#pass(head)) this.#out.relay(head);
    }
  }
}

export async function runShim(opts: ShimOptions): Promise<void> {
  const session = new ShimSession(opts);
  await session.connect();
  // Lines are handled one at a time, in order.
  let queue = Promise.resolve();
  const then = (step: () => unknown): void => {
    queue = queue.then(step).then(() => undefined, () => undefined);
  };
  opts.input.on('data', lineSplitter(MAX_CLIENT_LINE_BYTES, (line) => then(() => session.line(line)), (o) => then(() => session.oversized(o))));
  await new Promise<void>((resolve) => {
    opts.input.on('end', () => then(() => {
      session.end();
      resolve();
    }));
  });
}
