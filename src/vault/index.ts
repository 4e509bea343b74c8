/**
 * The vault's public surface. Everything outside src/vault imports from here.
 * The disk-free format layer — format.ts (header layout, parseHeader),
 * seal.ts (wrap/seal/unseal with given keys) and codec.ts (whole files ↔
 * contents) — is imported directly by tests and tools, not re-exported.
 */
export { changePassphrase, createVault, openVault, reopenVault, vaultExists, vaultKdf, withVaultWriter } from './vault.js';
export type { Reauthenticate, RekeyKeys, Reopened, VaultOptions, VaultSave, VaultStage, VaultUnlock } from './vault.js';
export { acquireWriterLock } from './writer-lock.js';
export { UnlockedVault } from './unlocked-vault.js';
export type { NewCredential } from './unlocked-vault.js';
export { MODERATE_KDF, MAXIMUM_KDF } from './format.js';
export type { KdfRunner } from './kdf.js';
export { belowFloorWarning, belowProductionFloor, describeKdf, kdfProfileFromEnvironment, PRODUCTION_KDF_PROFILE, TEST_KDF, TEST_KDF_PROFILE, TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE, vaultOptionsFor } from './kdf-profile.js';
export type { KdfProfile } from './kdf-profile.js';
export { CredentialKinds, isCredentialKind } from './types.js';
export type { Credential, CredentialKind, CredentialMeta, DerivedKeyPurpose, JournalGapMark, JournalMark, KdfParams } from './types.js';
