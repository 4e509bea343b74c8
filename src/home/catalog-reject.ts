/**
 * Rejecting a pending catalog (an operator's `catalog.reject` over the
 * operator channel): `catalog.yaml` is set aside as
 * `catalog.rejected-<digest prefix>.yaml` and replaced by the accepted copy,
 * so the edit is neither adopted nor lost.
 *
 * Invariants: only the exact file the operator reviewed is rejected (its
 * digest must still match, else CATALOG_PENDING and nothing moves); the copy
 * aside is written before catalog.yaml is replaced, both atomically; with no
 * accepted copy (a first catalog) catalog.yaml is removed after the copy.
 * Nothing here touches the vault, the acceptance record or its history.
 */
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PosternError } from '../rules/errors.js';
import { atomicWriteFile } from './atomic-write.js';
import { readCatalogFile } from './catalog-store.js';
import type { HomePaths } from './paths.js';

/** Sets the pending catalog aside; returns where it went. */
export async function rejectPendingCatalog(paths: HomePaths, digest: string): Promise<string> {
  const file = await readCatalogFile(paths.catalog);
  if (file === undefined || file.digest !== digest) {
    throw new PosternError('CATALOG_PENDING', `${paths.catalog} is not the file you reviewed (sha256 ${digest.slice(0, 16)}…); nothing was rejected`);
  }
  const aside = join(paths.home, `catalog.rejected-${digest.slice(0, 16)}.yaml`);
  await atomicWriteFile(aside, file.text);
  const accepted = await readCatalogFile(paths.acceptedCatalog);
  if (accepted !== undefined) await atomicWriteFile(paths.catalog, accepted.text);
  else await unlink(paths.catalog);
  return aside;
}
