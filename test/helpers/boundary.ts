/**
 * For the boundary tests (test/e2e/agent-sandbox, agent-devcontainer,
 * agent-other-user): bubblewrap — skipped with the reason when it is absent or
 * cannot make namespaces here, POSTERN_REQUIRE_BWRAP=1 (CI) makes that a
 * failure — and an installation with one read tool to call through.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Installation } from './daemon.js';
import type { FakeHttpServer } from './fake-http.js';
import { httpFixture, TOOLS } from './fixture.js';

export const BWRAP = '/usr/bin/bwrap';

export function bwrapSkip(): string | false {
  const works = existsSync(BWRAP) && spawnSync(BWRAP, ['--ro-bind', '/', '/', '--unshare-all', 'true']).status === 0;
  if (works) return false;
  if (process.env['POSTERN_REQUIRE_BWRAP'] === '1') throw new Error(`POSTERN_REQUIRE_BWRAP=1 but ${BWRAP} is absent or cannot make namespaces here (apt-get install bubblewrap)`);
  return `${BWRAP} is absent or cannot make namespaces here (apt-get install bubblewrap; POSTERN_REQUIRE_BWRAP=1 makes this a failure)`;
}

/** An installation with one read tool (`get_json`, no approval) against a loopback HTTP service: what the boundary tests call through. */
export async function installWithReadTool(canary: string): Promise<{ inst: Installation; http: FakeHttpServer }> {
  const { inst, http } = await httpFixture({ token: canary, tools: TOOLS.getJson, start: false });
  return { inst, http };
}
