/**
 * A home built once and copied: `install({ shared: true })` (test/helpers/daemon.ts)
 * makes its home with the CLI (`init`, one `secret add` a secret: a process and a
 * key derivation each) only the first time a set of secrets is asked for; it
 * keeps a copy under the OS temp dir, keyed by a hash of those secrets, the
 * passphrase, the build in dist/ and the day, and every later installation of
 * the same set (in this process or another) copies it into its own fresh home.
 *
 * A kept home is published with one rename, so test processes running side by
 * side never see half of one: the first to finish wins, the others drop theirs.
 * The copy keeps the modes install made (0700 directories, 0600 files). Kept
 * homes of days more than two before today are removed when a new one is made.
 */
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CLI } from './cli.js';

const ROOT = join(tmpdir(), 'postern-test-homes');
const STALE_MS = 2 * 24 * 3600 * 1000;

let built: Promise<string> | undefined;

/** The build the homes were made with: every file of dist/ by name, size and time of change. */
function buildStamp(): Promise<string> {
  built ??= (async () => {
    const dist = dirname(dirname(CLI));
    const h = createHash('sha256');
    for (const name of (await readdir(dist, { recursive: true })).sort()) {
      const st = await stat(join(dist, name));
      if (st.isFile()) h.update(`${name}\0${st.size}\0${st.mtimeMs}\n`);
    }
    return h.digest('hex');
  })();
  return built;
}

const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

/** Makes `home` (which must not exist yet) a copy of the kept home for `inputs`, building it with `build` (into `home`) when there is none. */
export async function sharedHome(home: string, inputs: unknown, build: () => Promise<void>): Promise<void> {
  // The day (faked with the rest of the clock under libfaketime): a vault's own times stay recent.
  const day = new Date().toISOString().slice(0, 10);
  const key = createHash('sha256')
    .update(JSON.stringify({ inputs, day, build: await buildStamp() }))
    .digest('hex')
    .slice(0, 32);
  const kept = join(ROOT, `${day}-${key}`);
  if (await exists(kept)) {
    try {
      await cp(kept, home, { recursive: true, errorOnExist: true, force: false });
      return;
    } catch {
      // Removed as stale by a process whose clock is elsewhere (the year-ahead pass): build it here.
      await rm(home, { recursive: true, force: true });
    }
  }
  await build();
  await mkdir(ROOT, { recursive: true, mode: 0o700 });
  const staging = join(ROOT, `.${key}.${process.pid}.${randomBytes(6).toString('hex')}`);
  await cp(home, staging, { recursive: true, errorOnExist: true, force: false });
  try {
    await rename(staging, kept);
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    // Another process kept the same home first: the same inputs, as good as ours.
    if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  await pruneStale();
}

/** Removes the kept homes of days more than two before today, and staging left by a killed process (by the same day rule, from its directory's time). */
async function pruneStale(): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(ROOT)) {
    const p = join(ROOT, name);
    const day = /^(\d{4}-\d{2}-\d{2})-/.exec(name)?.[1];
    const made = day === undefined ? (await stat(p).catch(() => null))?.mtimeMs : Date.parse(day);
    if (made !== undefined && now - made > STALE_MS) await rm(p, { recursive: true, force: true });
  }
}
