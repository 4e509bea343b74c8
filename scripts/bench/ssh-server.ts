/**
 * The SSH benchmark's server in a process of its own: the in-process test
 * server of test/unit/executors/ssh/support.ts (ssh2, `/bin/sh -c` per exec,
 * Nagle off), so that every client variant of scripts/bench/ssh.ts — in the
 * benchmark's process or in the daemon — crosses the same process boundary,
 * as it does with any real server. Prints one JSON line (port, host key
 * fingerprint, the client key it accepts) and runs until its stdin closes.
 */
import { CLIENT_KEY, startSshServer } from '../../test/unit/executors/ssh/support.js';

const srv = await startSshServer(undefined, { noDelay: true });
process.stdout.write(`${JSON.stringify({ port: srv.port, fingerprint: srv.hostKey.fingerprint, clientKey: CLIENT_KEY.private })}\n`);
process.stdin.resume();
process.stdin.once('end', () => {
  process.stderr.write(`ssh bench server: ${srv.accepted} connections, ${srv.execs.length} execs\n`);
  void srv.close().then(() => process.exit(0));
});
