import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkCoreDumps, checkPtraceScope, checkTiocsti } from '../../../src/home/host-checks.js';

describe('host checks (doctor)', () => {
  const cases = [
    { name: 'tiocsti off', f: () => checkTiocsti('0\n'), status: 'ok' },
    { name: 'tiocsti on', f: () => checkTiocsti('1\n'), status: 'warning', fix: /legacy_tiocsti=0/ },
    { name: 'tiocsti unknown (old kernel)', f: () => checkTiocsti(undefined), status: 'warning', fix: /terminal/ },
    { name: 'ptrace scope 0', f: () => checkPtraceScope('0'), status: 'warning', fix: /ptrace_scope=1/ },
    { name: 'ptrace scope 1', f: () => checkPtraceScope('1\n'), status: 'ok' },
    { name: 'ptrace scope 3', f: () => checkPtraceScope('3'), status: 'ok' },
    { name: 'no Yama', f: () => checkPtraceScope(undefined), status: 'warning', fix: /dedicated user/ },
    { name: 'garbage scope', f: () => checkPtraceScope('banana'), status: 'warning' },
    {
      name: 'core dumps off',
      f: () => checkCoreDumps('Limit Soft Hard Units\nMax core file size        0                    unlimited            bytes\n'),
      status: 'ok',
    },
    {
      name: 'core dumps on',
      f: () => checkCoreDumps('Max core file size        unlimited            unlimited            bytes\n'),
      status: 'warning',
      fix: /ulimit -c 0/,
    },
    { name: 'limits unreadable', f: () => checkCoreDumps(undefined), status: 'warning' },
  ] as const;
  for (const c of cases) {
    it(c.name, () => {
      const r = c.f();
      assert.equal(r.status, c.status);
      if (r.status === 'warning' && 'fix' in c) assert.match(r.fix, c.fix);
    });
  }
});
