/** The command table: one register function per command group. */
import type { Command } from 'commander';
import { registerInit } from './init.js';
import { registerSecret } from './secret.js';
import { registerPasswd } from './passwd.js';
import { registerDoctor } from './doctor.js';
import { registerCatalog } from './catalog.js';
import { registerDaemon } from './daemon.js';
import { registerApprovals } from './approvals.js';
import { registerAudit } from './audit.js';
import { registerSsh } from './ssh.js';
import { registerAnchor } from './anchor.js';
import { registerSetup } from './setup.js';
import { registerCompletion } from './completion.js';
import { registerDemo } from './demo.js';
import { registerAttach } from './attach.js';
import { registerUp } from './up.js';
import { registerHttp } from './http.js';

export function registerCommands(program: Command): void {
  registerInit(program);
  registerSecret(program);
  registerPasswd(program);
  registerDoctor(program);
  registerCatalog(program);
  registerDaemon(program);
  registerApprovals(program);
  registerAudit(program);
  registerSsh(program);
  registerAnchor(program);
  registerSetup(program);
  registerCompletion(program);
  registerDemo(program);
  registerAttach(program);
  registerUp(program);
  registerHttp(program);
}
