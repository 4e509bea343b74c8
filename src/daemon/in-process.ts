/**
 * The call pipeline's services for a daemon in this process, over a vault
 * and journals the caller opened: what tests and the benchmark run calls
 * against without spawning a daemon. Everything a call can reach is built
 * as the composition root builds it (limits counted from the journal, a
 * token cache that teaches the redactor, group commit); what only a daemon
 * with a home has (a vault file to follow, a shadow catalog, an operator
 * channel, unattended rules) is an explicit stand-in unless `parts` gives it.
 */
import type { Catalog } from '../contracts/index.js';
import type { Clock } from '../clock/index.js';
import type { Journals } from '../journal/index.js';
import type { UnlockedVault } from '../vault/index.js';
import type { DaemonConfig } from './services/config.js';
import { DaemonState, snapshotOf } from './services/state.js';
import { buildServices } from './pipeline/build-services.js';
import type { Services } from './pipeline/context.js';
import { memoryOnlyRefreshToken, noActivityEvents, noShadow, noVaultFile } from './pipeline/stand-ins.js';

interface InProcessBase {
  readonly vault: UnlockedVault;
  readonly catalog: Catalog;
  /** The catalog's digest as the snapshot carries it. */
  readonly digest: string;
  readonly journals: Journals;
  readonly config: DaemonConfig;
  readonly clock: Clock;
  /** Where background failures (an outcome the journal refused) are told. */
  readonly log?: (line: string) => void;
}

export function inProcessServices(base: InProcessBase, parts: Partial<Services> = {}): Services {
  const { clock, journals, config } = base;
  const log = base.log ?? ((): void => undefined);
  const state = parts.state ?? new DaemonState(base.vault, snapshotOf(base.catalog, base.digest, null));
  const learn = (name: string, token: Uint8Array): void => state.learnMinted(name, token);
  return buildServices(
    { state, journals, config, clock, log, pendingFile: null },
    { keepRefreshToken: memoryOnlyRefreshToken(learn), vaultFile: noVaultFile(), shadow: noShadow, onActivity: noActivityEvents, unattended: null, ...parts },
  );
}
