/**
 * The one place the vault loads libsodium. Importing this module waits for the
 * WASM build to be ready, so every export is usable synchronously afterwards.
 * `zero` wipes byte arrays in place; callers use it on every copy of key or
 * secret material they own once it is no longer needed.
 */
import sodium from 'libsodium-wrappers-sumo';

await sodium.ready;

export { sodium };

/** Overwrite each array with zeros (undefined entries are skipped). */
export function zero(...arrays: ReadonlyArray<Uint8Array | undefined>): void {
  for (const a of arrays) if (a !== undefined && a.byteLength > 0) sodium.memzero(a);
}
