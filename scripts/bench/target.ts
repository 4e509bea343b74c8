/**
 * The loopback target of the HTTP benchmark parts (http-calls.ts, rss.ts): a
 * bare node:http server on 127.0.0.1 answering every request with the same
 * small JSON body, with no request log (test/helpers/fake-http.ts keeps one,
 * which would grow over tens of thousands of calls and cost time in the
 * benchmark's own process).
 */
import { createServer, type Server } from 'node:http';

export interface LoopbackTarget {
  readonly origin: string;
  readonly server: Server;
}

export async function loopbackTarget(): Promise<LoopbackTarget> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true,"items":[1,2,3]}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}
