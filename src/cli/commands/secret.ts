/**
 * `postern secret add|list|rotate|rm|retention`. Secrets go into the vault and never come
 * out through the CLI: `list` prints metadata only, and no command reveals or
 * exports a value. The vault remembers every value a rotate or rm replaced,
 * and every token the daemon minted, for as long as it matters, so redaction
 * still recognizes it after a restart; `retention` shows those values
 * (metadata only) and sets how many days a retired one is kept. A running daemon adopts each saved change before its next
 * call (src/daemon/lifecycle/vault-follow.ts). `rm` of a credential the accepted catalog
 * uses names the tools it breaks and needs --yes or a confirmation
 * (SECRET_IN_USE without a terminal).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { CredentialKinds, isCredentialKind, type CredentialKind, type CredentialMeta } from '../../vault/types.js';
import { belowFloorWarning, belowProductionFloor, openVault, type KdfParams } from '../../vault/index.js';
import { MAX_RETENTION_DAYS, type RememberedMeta } from '../../vault/types.js';
import { CREDENTIAL_NAME, nameProblem } from '../../vault/credentials.js';
import { writeVault } from '../../home/vault-write.js';
import { PosternError, isPosternError } from '../../rules/errors.js';
import type { AcceptanceMark } from '../../contracts/index.js';
import type { HomePaths } from '../../home/paths.js';
import { contextFor } from '../context.js';
import { examples } from '../help.js';
import { STARTER_SECRET } from '../starter-catalog.js';
import type { SecretSourceOpts } from '../secret-input.js';
import type * as SecretInput from '../secret-input.js';

type SecretInputModule = typeof SecretInput;
import { canPrompt, confirm } from '../tty.js';
import { renderTable } from '../table.js';
import { mintsTokens, tokenStateLines, tokenStates, type TokenStates } from '../token-states.js';
import { operatorSocketPath } from './approvals.js';

/** Loaded when a secret is read (its SSH key parser pulls in ssh2): `list` and `rm` never need it. */
const secretInput = (): Promise<SecretInputModule> => import('../secret-input.js');

interface AddOpts extends SecretSourceOpts {
  kind: string;
  username?: string;
  header?: string;
  param?: string;
  accessKeyId?: string;
  clientId?: string;
  appId?: string;
  installationId?: string;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const PARAM_NAME = /^[A-Za-z0-9._~-]{1,128}$/;

/** The public fields each kind needs, taken from the options. */
function fieldsFor(kind: CredentialKind, o: AddOpts): Record<string, string> {
  const need = (v: string | undefined, flag: string): string => {
    if (v === undefined || v === '') throw new PosternError('USAGE', `--kind ${kind} needs ${flag}`);
    return v;
  };
  switch (kind) {
    case 'http_basic': {
      const username = need(o.username, '--username NAME');
      if (username.includes(':') || /[\r\n\0]/.test(username)) {
        throw new PosternError('INPUT_INVALID', 'a basic-auth username cannot contain ":", line breaks or NUL');
      }
      return { username };
    }
    case 'http_header': {
      const header = need(o.header, '--header NAME');
      if (!HEADER_NAME.test(header)) throw new PosternError('INPUT_INVALID', `"${header.slice(0, 64)}" is not a valid HTTP header name`);
      return { header: header.toLowerCase() };
    }
    case 'http_query': {
      const param = need(o.param, '--param NAME');
      if (!PARAM_NAME.test(param)) throw new PosternError('INPUT_INVALID', 'a query parameter name may use letters, digits and . _ ~ - only');
      return { param };
    }
    case 'aws_sigv4': {
      const id = need(o.accessKeyId, '--access-key-id ID');
      if (!/^[A-Z0-9]{16,128}$/.test(id)) throw new PosternError('INPUT_INVALID', 'an AWS access key id is 16 to 128 upper-case letters and digits');
      return { access_key_id: id };
    }
    case 'oauth_client_credentials':
    case 'oauth_refresh_token': {
      const id = need(o.clientId, '--client-id ID');
      if (!/^[\x20-\x7E]{1,256}$/.test(id)) throw new PosternError('INPUT_INVALID', 'an OAuth client id is 1 to 256 printable ASCII characters');
      return { client_id: id };
    }
    case 'github_app': {
      const app = need(o.appId, '--app-id ID');
      const installation = need(o.installationId, '--installation-id ID');
      if (!/^[0-9]{1,20}$/.test(app) || !/^[0-9]{1,20}$/.test(installation)) throw new PosternError('INPUT_INVALID', 'a GitHub App id and installation id are numbers');
      return { app_id: app, installation_id: installation };
    }
    case 'http_bearer':
    case 'ssh_key':
    case 'ssh_password':
    case 'postgres_url':
      return {};
    case 'tls_key':
      throw new PosternError('USAGE', 'a tls_key is made by `postern approvals page enable --bind ADDR`, not added by hand');
  }
}

/** A suggestion for a name that breaks only the case rule: `My_Token` → `my_token`. */
function suggestName(name: string): string {
  const s = name.toLowerCase();
  return s !== name && CREDENTIAL_NAME.test(s) ? ` (try "${s}")` : '';
}

function addSourceOptions(c: Command): Command {
  return c
    .option('--from-file <file>', 'read the value from a file (one trailing newline is dropped; SSH keys are read as is)')
    .option('--stdin', 'read the value from standard input')
    .option('--key-passphrase-file <file>', 'ssh_key: file holding the passphrase of an encrypted key')
    .option('--session-token-file <file>', 'aws_sigv4: file holding a session token (temporary credentials)')
    .option('--client-secret-file <file>', 'oauth_refresh_token: file holding the client secret of a confidential client');
}

function metaRow(m: CredentialMeta): string[] {
  const details = Object.entries(m.fields).map(([k, v]) => `${k}=${v}`).join(' ');
  return [m.name, m.kind, m.created_at, m.rotated_at ?? '-', m.last_used_at ?? '-', details];
}

export function registerSecret(program: Command): void {
  const secret = program.command('secret').description('store and manage credentials in the vault (values are never shown)').addHelpText('after', examples([
    `postern secret add ${STARTER_SECRET} --kind http_bearer   # the value is asked without echo`,
    'postern secret list',
    `postern secret rotate ${STARTER_SECRET}`,
  ]));

  registerSecretAdd(secret);
  registerSecretList(secret);
  registerSecretRetention(secret);
  registerSecretRotate(secret);
  registerSecretRm(secret);
}

function registerSecretAdd(secret: Command): void {
  addSourceOptions(
    secret
      .command('add <name>')
      .description('add a credential; the value is read without echo, from a file, or from stdin')
      .addHelpText('after', examples([
        `postern secret add ${STARTER_SECRET} --kind http_bearer`,
        'postern secret add jira --kind http_basic --username ann@example.com',
        'postern secret add deploy-key --kind ssh_key --from-file ~/.ssh/id_ed25519',
        'printf %s "$TOKEN" | postern secret add ci-token --kind http_header --header X-Api-Key --stdin',
      ]))
      .addOption(new Option('--kind <kind>', 'credential kind').choices(Object.keys(CredentialKinds)).makeOptionMandatory())
      .option('--username <name>', 'http_basic: the user name (stored as metadata)')
      .option('--header <name>', 'http_header: the header that carries the value')
      .option('--param <name>', 'http_query: the query parameter that carries the value')
      .option('--access-key-id <id>', 'aws_sigv4: the access key id (stored as metadata; the secret access key is the value read)')
      .option('--client-id <id>', 'oauth_client_credentials, oauth_refresh_token: the client id (stored as metadata; the value read is the client secret, or the refresh token)')
      .option('--app-id <id>', 'github_app: the app id (stored as metadata; the private key PEM is the value read)')
      .option('--installation-id <id>', 'github_app: the installation whose token is minted (stored as metadata)'),
  ).action(async (name: string, o: AddOpts, cmd: Command) => {
    const ctx = contextFor(cmd);
    // Cheap checks first: nothing is asked for a name the vault would refuse.
    const bad = nameProblem(name);
    if (bad !== null) throw new PosternError('INPUT_INVALID', `"${name.slice(0, 64)}" is not a valid name: ${bad}${suggestName(name)}`);
    if (!isCredentialKind(o.kind)) throw new PosternError('USAGE', `unknown kind ${o.kind}`);
    const kind = o.kind;
    const fields = fieldsFor(kind, o);
    const input = await (await secretInput()).readSecretInput(kind, o, fields);
    const pass = await ctx.unlockPassphrase();
    try {
      await writeVault(ctx, pass, (v) => v.add({ name, kind, fields: input.fields, secret: input.secret }));
    } finally {
      pass.fill(0);
      for (const part of Object.values(input.secret)) part.fill(0);
    }
    ctx.out(`added ${kind} secret "${name}"`);
  });
}

function registerSecretList(secret: Command): void {
  secret
    .command('list')
    .description('list credentials: names, kinds and dates, never values')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const pass = await ctx.unlockPassphrase();
      let metas: CredentialMeta[];
      let key: Uint8Array | undefined;
      let kdf: KdfParams;
      let remembered: RememberedMeta[];
      let retention: number;
      let macKey: Uint8Array;
      let mark: AcceptanceMark | null;
      try {
        const v = await openVault(ctx.paths.vault, pass, ctx.vault);
        metas = v.list();
        kdf = v.kdf;
        remembered = v.remembered().map((r) => r.meta);
        retention = v.retentionDays;
        if (metas.some((m) => mintsTokens(m.kind))) key = Uint8Array.from(v.deriveKey('operator-auth'));
        macKey = Uint8Array.from(v.deriveKey('catalog-mac'));
        mark = v.acceptedCatalog;
        v.lock();
      } finally {
        pass.fill(0);
      }
      try {
        // LAST USED comes from the journal (the vault is not written per call): the later of the two.
        const { readLastUsed } = await import('../credential-last-used.js');
        const used = await readLastUsed(ctx.paths, macKey, mark);
        metas = metas.map((m) => {
          const at = used.get(m.name);
          return at !== undefined && (m.last_used_at === null || at > m.last_used_at) ? { ...m, last_used_at: at } : m;
        });
      } finally {
        macKey.fill(0);
      }
      // On stderr, so `--json` stays an array; a person at a terminal sees it either way.
      if (belowProductionFloor(kdf)) process.stderr.write(`postern: warning: ${belowFloorWarning(kdf)}\n`);
      const minting = metas.filter((m) => mintsTokens(m.kind)).map((m) => m.name);
      let states: TokenStates = { daemon: 'not_running' };
      try {
        if (key !== undefined) states = await tokenStates(operatorSocketPath(ctx), key);
      } finally {
        key?.fill(0);
      }
      if (o.json === true) {
        // A minting credential gets `token_state`: the daemon's view, or that the daemon is not running.
        const stateOf = (name: string) => (states.daemon === 'running' ? { daemon: 'running', ...(states.states.find((x) => x.name === name) ?? { valid_until: null, last_refresh: null, last_error: null }) } : { daemon: states.daemon });
        ctx.out(JSON.stringify(metas.map((m) => (mintsTokens(m.kind) ? { ...m, token_state: stateOf(m.name) } : m)), null, 2));
      } else if (metas.length === 0) {
        ctx.out('no secrets yet: add one with `postern secret add NAME --kind KIND`');
      } else {
        ctx.out(renderTable(['NAME', 'KIND', 'CREATED', 'ROTATED', 'LAST USED', 'DETAILS'], metas.map(metaRow)));
        for (const line of tokenStateLines(minting, states)) ctx.out(line);
      }
      if (o.json !== true) ctx.out(rememberedLine(remembered, retention));
    });
}

function registerSecretRetention(secret: Command): void {
  secret
    .command('retention [days]')
    .description('show the earlier values redaction still recognizes (metadata only), or set how many days a retired value is kept')
    .addHelpText('after', examples(['postern secret retention', 'postern secret retention 90']))
    .option('--json', 'print JSON')
    .action(async (days: string | undefined, o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const wanted = days === undefined ? undefined : Number(days);
      if (wanted !== undefined && (!/^[0-9]{1,4}$/.test(days ?? '') || wanted > MAX_RETENTION_DAYS)) {
        throw new PosternError('USAGE', `the retention is a whole number of days from 0 to ${MAX_RETENTION_DAYS}`);
      }
      const pass = await ctx.unlockPassphrase();
      let remembered: RememberedMeta[] = [];
      let retention = 0;
      try {
        await writeVault(ctx, pass, (v) => {
          if (wanted !== undefined) v.setRetentionDays(wanted);
          remembered = v.remembered().map((r) => r.meta);
          retention = v.retentionDays;
        });
      } finally {
        pass.fill(0);
      }
      if (o.json === true) {
        ctx.out(JSON.stringify({ retention_days: retention, remembered }, null, 2));
        return;
      }
      if (wanted !== undefined) ctx.out(`retired values are now kept ${retention} days`);
      if (remembered.length > 0) ctx.out(renderTable(['NAME', 'KIND', 'WHY', 'SINCE', 'UNTIL'], remembered.map((m) => [m.name, m.kind, m.source, m.since, m.until ?? `+${retention} days`])));
      ctx.out(rememberedLine(remembered, retention));
    });
}

function registerSecretRotate(secret: Command): void {
  addSourceOptions(
    secret.command('rotate <name>').description('replace the value of a credential, keeping its name and kind'),
  ).action(async (name: string, o: SecretSourceOpts, cmd: Command) => {
    const ctx = contextFor(cmd);
    const pass = await ctx.unlockPassphrase();
    try {
      await writeVault(ctx, pass, async (v) => {
        const meta = v.list().find((m) => m.name === name);
        if (meta === undefined) throw new PosternError('SECRET_NOT_FOUND', `no secret named "${name}"`);
        const keep = Object.fromEntries(Object.entries(meta.fields).filter(([k]) => k !== 'key_type' && k !== 'public_fingerprint'));
        const input = await (await secretInput()).readSecretInput(meta.kind, o, keep);
        try {
          v.rotate(name, input.secret, input.fields);
        } finally {
          for (const part of Object.values(input.secret)) part.fill(0);
        }
      });
    } finally {
      pass.fill(0);
    }
    ctx.out(`rotated secret "${name}"`);
  });
}

function registerSecretRm(secret: Command): void {
  secret
    .command('rm <name>')
    .description('remove a credential from the vault (asks first; tools of the accepted catalog that use it then fail)')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (name: string, o: { yes?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const pass = await ctx.unlockPassphrase();
      let removed = false;
      try {
        // Decided under the writer lock, so the tools named are the ones of the vault being changed.
        ({ result: removed } = await writeVault(ctx, pass, async (v) => {
          if (v.get(name) === undefined) throw new PosternError('SECRET_NOT_FOUND', `no secret named "${name}"`);
          const use = await catalogUse(ctx.paths, v.deriveKey('catalog-mac'), v.acceptedCatalog, name);
          const warning = use.kind === 'used'
            ? `the accepted catalog uses "${name}" in ${use.tools.length} tool(s): ${use.tools.join(', ')}; they will fail with CREDENTIAL_MISSING until it is added again`
            : use.kind === 'unknown'
              ? `the accepted catalog could not be read (${use.why}), so tools may use "${name}"`
              : null;
          if (o.yes !== true) {
            if (!canPrompt()) {
              if (warning !== null) throw new PosternError('SECRET_IN_USE', `${warning}; pass --yes to remove it anyway`, { details: { name, tools: use.kind === 'used' ? use.tools : [] } });
              throw new PosternError('USAGE', 'no terminal to confirm the removal: pass --yes');
            }
            const question = warning === null ? `Remove secret "${name}"? Tools that use it will fail.` : `Warning: ${warning}. Remove secret "${name}"?`;
            if (!confirm(question)) return false;
          } else if (warning !== null) {
            process.stderr.write(`postern: warning: ${warning}\n`);
          }
          v.remove(name);
          return true;
        }));
      } finally {
        pass.fill(0);
      }
      ctx.out(removed ? `removed secret "${name}"` : 'nothing removed');
    });
}

/** What `secret list` says of the remembered values: how many, why, for how long, and where to change it. */
function rememberedLine(remembered: readonly RememberedMeta[], retention: number): string {
  const retired = remembered.filter((m) => m.source === 'retired').length;
  const minted = remembered.length - retired;
  return `redaction also recognizes ${retired} retired value${retired === 1 ? '' : 's'} (kept ${retention} day${retention === 1 ? '' : 's'} after retirement; change with \`postern secret retention DAYS\`) and ${minted} minted token${minted === 1 ? '' : 's'} (until they expire)`;
}

type CatalogUse = { readonly kind: 'used'; readonly tools: string[] } | { readonly kind: 'unused' } | { readonly kind: 'unknown'; readonly why: string };

/** Which tools of the accepted catalog send `name`. */
async function catalogUse(paths: HomePaths, macKey: Uint8Array, mark: AcceptanceMark | null, name: string): Promise<CatalogUse> {
  try {
    const [{ loadAcceptedCatalog }, { toolsUsingCredential }] = await Promise.all([import('../../home/catalog-store.js'), import('../../contracts/index.js')]);
    const accepted = await loadAcceptedCatalog(paths, macKey, mark);
    const tools = accepted === undefined ? [] : toolsUsingCredential(accepted.catalog, name);
    return tools.length === 0 ? { kind: 'unused' } : { kind: 'used', tools };
  } catch (e) {
    return { kind: 'unknown', why: isPosternError(e) ? e.code : 'error' };
  }
}
