/** Our reverse-DNS prefix for `_meta` keys (the daemon's results and listings, the shim's reading of them). */
export const META_PREFIX = 'dev.postern';

/** A valid tool name (MCP's rule): the catalog, the shim's hello and the daemon all check it here. */
export const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;
