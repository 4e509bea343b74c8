// Compiles test files for scripts/run-tests.mjs, in one esbuild run, into the run's own folder
// under .tmp/test-build/ (inside the project, so packages resolve as they do from the sources):
// each test file becomes one ES module at the same relative path (.js, with a source map),
// holding what it imports from test/ and src/; packages stay in node_modules, but ink (below). A test process then loads files it
// can run as they are, instead of registering tsx's loader and transpiling its sources module
// by module, which cost about a second of CPU per process (docs/decisions.md, "The test suite").
//
// `import.meta.url`, `.dirname` and `.filename` keep the values they have in the source file
// (a test finds dist/, its fixtures and the sources it reads beside itself), so a module
// behaves as it does under tsx; `import.meta.resolve` resolves packages from the project, as
// before. Code that starts a TypeScript child (a worker, `node --import tsx x.ts`) still
// starts it with tsx.
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** The folder of one run's compiled files (removed by the caller when the run ends). */
export const testBuildDir = () => join('.tmp', 'test-build', `run-${process.pid}`);

const IMPORT_META = /\bimport\.meta\.(url|dirname|filename)\b/g;

const sourcePlace = {
  name: 'source-place',
  setup(b) {
    b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const values = { url: pathToFileURL(args.path).href, dirname: dirname(args.path), filename: args.path };
      return { contents: text.replace(IMPORT_META, (_m, k) => JSON.stringify(values[k])), loader: args.path.endsWith('x') ? 'tsx' : 'ts' };
    });
  },
};

/**
 * Packages stay in node_modules, but for ink (and the test renderer that uses it), compiled in
 * with all they import except React (one copy, shared with the tests' own imports). A package
 * left outside loads before any compiled module, and ink reads the environment when it loads:
 * the TUI's entry changes that environment first (src/tui/interactive.ts), as it does in the
 * bundle that runs, where ink is compiled in too.
 */
const COMPILED_IN = ['ink', 'ink-testing-library'];
const SHARED = ['react'];
const packageName = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
const packages = {
  name: 'packages',
  setup(b) {
    // ink's devtools, imported only when DEV=true, import a package that is not installed: left
    // outside, that import stays lazy instead of being hoisted to the top of the file.
    b.onResolve({ filter: /^\.\/devtools\.js$/ }, (args) =>
      args.importer.includes(`${sep}node_modules${sep}ink${sep}`) ? { path: resolve(dirname(args.importer), args.path), external: true } : undefined,
    );
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = packageName(args.path);
      if (SHARED.includes(name)) return { external: true };
      // A file inside node_modules is read only when its package is compiled in: so is what it imports.
      if (COMPILED_IN.includes(name) || args.importer.includes(`${sep}node_modules${sep}`)) return undefined;
      return { external: true };
    });
  },
};

/** Compiles `files` (paths relative to the project root, the working directory) into `dir`; returns each one's compiled path. */
export async function buildTests(files, dir) {
  await build({
    entryPoints: files.map((f) => resolve(f)),
    outdir: dir,
    outbase: '.',
    bundle: true,
    // No chunks shared between files: esbuild may run the side effects of shared chunks in
    // another order than the sources import them, and within one file it keeps that order.
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    plugins: [packages, sourcePlace],
    // CommonJS packages compiled in call require() for Node's own modules.
    banner: { js: "import { createRequire as __testRequire } from 'node:module'; const require = __testRequire(import.meta.url);" },
    logLevel: 'error',
  });
  return new Map(files.map((f) => [f, join(dir, relative(process.cwd(), resolve(f)).replace(/\.tsx?$/, '.js'))]));
}
