/**
 * Minimal typing for the parts of libsodium-wrappers-sumo the vault uses.
 * Deliberately local: the package's own typings are not relied upon, and only
 * the default export exists at runtime (named imports fail). Keep this list to
 * what src/vault calls.
 */
declare module 'libsodium-wrappers-sumo' {
  interface Sodium {
    readonly ready: Promise<void>;
    readonly crypto_pwhash_ALG_ARGON2ID13: number;
    readonly base64_variants: { readonly ORIGINAL: number };
    crypto_pwhash(
      keyLength: number,
      password: Uint8Array,
      salt: Uint8Array,
      opsLimit: number,
      memLimit: number,
      algorithm: number,
    ): Uint8Array<ArrayBuffer>;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
      message: Uint8Array,
      additionalData: Uint8Array | null,
      secretNonce: null,
      publicNonce: Uint8Array,
      key: Uint8Array,
    ): Uint8Array<ArrayBuffer>;
    crypto_aead_xchacha20poly1305_ietf_decrypt(
      secretNonce: null,
      ciphertext: Uint8Array,
      additionalData: Uint8Array | null,
      publicNonce: Uint8Array,
      key: Uint8Array,
    ): Uint8Array<ArrayBuffer>;
    crypto_kdf_derive_from_key(subkeyLength: number, subkeyId: number, context: string, key: Uint8Array): Uint8Array<ArrayBuffer>;
    crypto_sign_seed_keypair(seed: Uint8Array): { publicKey: Uint8Array<ArrayBuffer>; privateKey: Uint8Array<ArrayBuffer>; keyType: string };
    crypto_sign_detached(message: Uint8Array, privateKey: Uint8Array): Uint8Array<ArrayBuffer>;
    crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
    randombytes_buf(length: number): Uint8Array<ArrayBuffer>;
    memzero(bytes: Uint8Array): void;
    to_base64(input: Uint8Array, variant: number): string;
    from_base64(input: string, variant: number): Uint8Array<ArrayBuffer>;
  }
  const sodium: Sodium;
  export default sodium;
}
