// Lint: typed rules that catch what matters here — floating promises and
// non-exhaustive switches over tagged unions.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'vault/vectors/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['scripts/*.mjs', 'scripts/conformance/*.mjs', 'eslint.config.js'], maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16 }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  {
    // One clock (DESIGN §12): only src/clock reads the time; everything else is handed a Clock.
    files: ['src/**'],
    ignores: ['src/clock/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: 'read the time from the injected Clock' },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'read the time from the injected Clock' },
        { selector: "CallExpression[callee.object.name='performance'][callee.property.name='now']", message: 'read monotonic time from the injected Clock' },
        { selector: "MemberExpression[object.name='process'][property.name='hrtime']", message: 'read monotonic time from the injected Clock' },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The approval page's browser modules (served as they are, no build step): plain JS, browser globals.
    files: ['src/daemon/approval-page/static/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'module',
      parserOptions: { projectService: false },
      globals: { window: 'readonly', document: 'readonly', fetch: 'readonly', localStorage: 'readonly', AbortController: 'readonly', setTimeout: 'readonly', location: 'readonly', history: 'readonly', setInterval: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', btoa: 'readonly', atob: 'readonly', crypto: 'readonly', indexedDB: 'readonly', navigator: 'readonly', IntersectionObserver: 'readonly' },
    },
    // The countdown runs on the browser's clock, offset by the daemon's `now`: the daemon's Clock rule is not the page's.
    rules: { ...tseslint.configs.disableTypeChecked.rules, 'no-restricted-syntax': 'off' },
  },
  {
    files: ['src/cli/**', 'scripts/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['test/**', 'scripts/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
    },
  },
);
