/** The build version, reported by `postern --version` and recorded as part of the handler revision. */
export const VERSION = '0.1.0';
