/**
 * The demo's SSH target: an in-process ssh2 server on 127.0.0.1 with its own
 * host key (pinned in the demo catalog) that accepts only the demo client
 * key. It runs no shell: each exec's command line is split back into argv
 * (the POSIX single quoting Postern produces) and answered by a scripted
 * `/srv/deploy.sh --branch=B REGION`; anything else exits 127. Every exec is
 * appended to the request log before it is answered.
 */
import { generateKeyPairSync, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ssh2 } from '../libraries.js';
import type { Connection, ParsedKey } from 'ssh2';
import { sshFingerprint } from '../executors/ssh/index.js';
import type { RequestLog } from './request-log.js';

interface DemoKeyPair {
  /** PEM (SEC1 ECDSA P-256), a format ssh2 parses every time. */
  readonly privatePem: string;
  /** `ecdsa-sha2-nistp256 AAAA…`, as in an authorized_keys file. */
  readonly publicLine: string;
  /** `ecdsa-sha2-nistp256`, as ssh2 names the key type (a credential's `key_type`). */
  readonly keyType: string;
  /** `SHA256:…` of the public key (a credential's `public_fingerprint`). */
  readonly fingerprint: string;
}

export function demoKeyPair(): DemoKeyPair {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'sec1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const parsed = ssh2().utils.parseKey(privateKey);
  if (parsed instanceof Error || Array.isArray(parsed)) throw new Error('the demo could not make an SSH key');
  const key = parsed;
  const publicSsh = key.getPublicSSH();
  return { privatePem: privateKey, publicLine: `${key.type} ${publicSsh.toString('base64')}`, keyType: key.type, fingerprint: sshFingerprint(publicSsh) };
}

/** Splits a command line made of POSIX single-quoted words (`'a'\''b' 'c'`); null for anything else. */
export function splitQuoted(command: string): string[] | null {
  if (command === '') return null;
  const words: string[] = [];
  let i = 0;
  while (i < command.length) {
    let word = '';
    let any = false;
    while (i < command.length && command[i] !== ' ') {
      if (command[i] === "'") {
        const end = command.indexOf("'", i + 1);
        if (end < 0) return null;
        word += command.slice(i + 1, end);
        i = end + 1;
      } else if (command.startsWith("\\'", i)) {
        word += "'";
        i += 2;
      } else return null;
      any = true;
    }
    if (!any) return null;
    words.push(word);
    if (i < command.length) i++;
  }
  return words;
}

/** What the scripted host answers for one argv. */
function answer(argv: readonly string[]): { code: number; out: string; err: string } {
  const branch = /^--branch=(.+)$/.exec(argv[1] ?? '')?.[1];
  if (argv[0] === '/srv/deploy.sh' && branch !== undefined && argv.length === 3) {
    const region = argv[2] ?? '';
    return { code: 0, out: `deployed ${branch} to ${region}: https://${branch.replaceAll('/', '-')}.${region}.preview.example\n`, err: '' };
  }
  return { code: 127, out: '', err: 'demo host: unknown command\n' };
}

interface DemoSshService {
  readonly port: number;
  close(): Promise<void>;
}

export async function startSshService(log: RequestLog, hostKey: DemoKeyPair, clientPublicLine: string, user: string): Promise<DemoSshService> {
  const clientKey = ssh2().utils.parseKey(clientPublicLine) as ParsedKey;
  const clientPublicSsh = clientKey.getPublicSSH();
  const conns = new Set<Connection>();
  const server = new (ssh2().Server)({ hostKeys: [hostKey.privatePem] }, (conn) => {
    conns.add(conn);
    conn.on('close', () => conns.delete(conn));
    conn.on('error', () => undefined);
    let login = '';
    conn.on('authentication', (ctx) => {
      const same = ctx.method === 'publickey' && ctx.username === user && ctx.key.algo === clientKey.type && ctx.key.data.length === clientPublicSsh.length && timingSafeEqual(ctx.key.data, clientPublicSsh);
      if (same && ctx.method === 'publickey') {
        if (ctx.signature === undefined || ctx.blob === undefined) return ctx.accept();
        if (clientKey.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) {
          login = ctx.username;
          return ctx.accept();
        }
      }
      ctx.reject(['publickey']);
    });
    conn.on('ready', () => {
      conn.on('session', (accept) => {
        const session = accept();
        session.on('exec', (acceptExec, _reject, info) => {
          const argv = splitQuoted(info.command) ?? [info.command];
          log.append({ target: 'ssh', user: login, argv, auth: 'ok' });
          const stream = acceptExec();
          const { code, out, err } = answer(argv);
          stream.on('error', () => undefined);
          stream.stderr.write(err);
          stream.write(out);
          stream.exit(code);
          stream.end();
        });
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const c of conns) c.end();
        server.close(() => resolve());
      });
      return closing;
    },
  };
}
