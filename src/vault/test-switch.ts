/**
 * The test key-derivation switch's name and its one value (kdf-profile.ts
 * says what it does), in a module of their own that imports nothing, so the
 * test crash point (file-events.ts), which every file writer imports, can
 * check the switch without an import cycle through the vault.
 */
export const TEST_KDF_SWITCH = 'POSTERN_TEST_KDF';
/** The one value that turns the test profile on; it says what it does. */
export const TEST_KDF_SWITCH_VALUE = 'insecure-fast-for-tests-only';
