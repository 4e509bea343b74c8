#!/usr/bin/env node
// After tsc: copy the approval page's static files (HTML, CSS, its scripts) next to their module
// (they are served as they are, with no build step of their own), then bundle what runs.
//
// tsc's modules stay in dist/ as they are: the import-boundary tests read their graph. Over three
// of them esbuild writes the bundle that runs: the entries dist/cli/main.js (the `postern`
// binary), dist/vault/kdf-worker.js and dist/daemon/worker-main.js (worker threads), and the
// chunks they share in dist/chunks/. A command then opens a few files instead of hundreds: a
// process start costs about a quarter less (docs/decisions.md, "Performance"). Dynamic imports
// stay dynamic (each is a chunk of its own), so `postern mcp` still loads only the shim. The
// packages with native parts or optional native dependencies, and those already loaded on first
// use (src/libraries.ts), stay in node_modules. What went into which file is in dist/bundle.json
// (esbuild's metafile). Every entry and chunk sits one folder below dist/: src/package-files.ts
// counts on it to find the files that ship beside the code.
import { chmodSync, cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const dist = (path) => new URL(`../dist/${path}`, import.meta.url).pathname;
const ENTRIES = { 'cli/main': 'cli/main.js', 'vault/kdf-worker': 'vault/kdf-worker.js', 'daemon/worker-main': 'daemon/worker-main.js' };
const LEFT_IN_NODE_MODULES = ['better-sqlite3', 'pg', 'qrcode', '@simplewebauthn/server', 'undici', 'ssh2', 'string-width', 'react-devtools-core'];

// zod re-exports all of its ~50 message locales (`z.locales`) from the module every schema
// imports, so a bundle would carry them all (about 360 KiB, half of zod, parsed by every
// command). Postern never configures another locale: in the bundle, zod's locale index holds
// English only (its default, which zod's schemas import by themselves).
const englishOnlyZodLocales = {
  name: 'zod-locales-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: new URL('../locales/en.js', `file://${args.importer}`).pathname, namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({ contents: `export { default as en } from ${JSON.stringify(args.path)};`, resolveDir: '/' }));
  },
};

cpSync(new URL('../src/daemon/approval-page/static/', import.meta.url), dist('daemon/approval-page/static/'), { recursive: true });

for (const file of Object.values(ENTRIES)) {
  if (!existsSync(dist(file))) throw new Error(`dist/${file} is missing: run \`npm run build\` (tsc first)`);
}
rmSync(dist('chunks'), { recursive: true, force: true });
const result = await build({
  entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([out, file]) => [out, dist(file)])),
  outdir: dist(''),
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  external: LEFT_IN_NODE_MODULES,
  plugins: [englishOnlyZodLocales],
  define: { POSTERN_BUNDLED: 'true' },
  // CommonJS packages inside the bundle call require() for Node's own modules.
  banner: { js: "import { createRequire as __posternRequire } from 'node:module'; const require = __posternRequire(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
});
for (const out of Object.keys(result.metafile.outputs)) {
  const depth = out.replace(/^.*?dist\//, '').split('/').length;
  if (depth !== 2) throw new Error(`${out}: every file of the bundle must sit one folder below dist/ (src/package-files.ts)`);
}
writeFileSync(dist('bundle.json'), `${JSON.stringify(result.metafile)}\n`);
chmodSync(dist('cli/main.js'), 0o755);
