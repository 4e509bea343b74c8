/**
 * The one rule for finding a file that ships beside the code (the approval
 * page's static files, the worker entries, the CLI's own entry): a path
 * relative to the build's root, dist/ (src/ when the tests run the sources).
 *
 * dist/ holds tsc's modules and, over three of them, the bundle that runs
 * (scripts/postbuild.mjs): the entries dist/cli/main.js,
 * dist/vault/kdf-worker.js and dist/daemon/worker-main.js, and the chunks
 * they share in dist/chunks/. This module's code is inlined into one of
 * those files, each one folder below dist/, so there the root is `../`; the
 * bundler says so by defining POSTERN_BUNDLED. In tsc's module
 * (dist/package-files.js) and in the sources it is `./`.
 */
declare const POSTERN_BUNDLED: boolean | undefined;

const ROOT = new URL(typeof POSTERN_BUNDLED === 'boolean' && POSTERN_BUNDLED ? '../' : './', import.meta.url);

/** The URL of `path` (relative to dist/, `/`-separated) in the running build. */
export function packageFile(path: string): URL {
  return new URL(path, ROOT);
}
