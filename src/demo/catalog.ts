/**
 * The demo catalog, the story in two acceptances:
 *
 * #1: `list_tickets` (read), `create_ticket` (write, per-call approval) on the
 *     HTTP tracker; `deploy_preview` (write, session approval) over SSH,
 *     revision 1: `{branch}`, always to `us-east-preview`.
 * #2, accepted while the agent's session is live:
 *   - `deploy_preview` r2 requires `region` (`adapt`: calls planned against
 *     r1 get `region: us-east-preview`, the region they always deployed to).
 *     The literal region became a parameter, so r2 also widens authority: a
 *     session grant given for r1 no longer applies.
 *   - `create_ticket` r2 requires `team`, which has no safe default
 *     (`reject`: calls planned against r1 stop before any request).
 *
 * Only targets differ between runs (ports, the pinned host key).
 */
import { stringify } from 'yaml';

export interface DemoTargets {
  readonly httpOrigin: string;
  readonly sshPort: number;
  readonly sshUser: string;
  readonly hostKey: string;
}

export const DEMO_CREDENTIALS = { http: 'tracker-token', ssh: 'deploy-key' } as const;

const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required });
const branch = { type: 'string', pattern: '^[A-Za-z0-9._/-]{1,100}$' };
const title = { type: 'string', maxLength: 200 };
const region = { enum: ['us-east-preview', 'eu-preview'] };
const team = { enum: ['web', 'infra'] };

const createTicketR1 = { revision: 1, input: object({ title }, ['title']), http: { target: 'tracker', method: 'POST', path: '/tickets', body: { title: '{title}' } } };
const createTicketR2 = {
  revision: 2,
  input: object({ title, team }, ['title', 'team']),
  http: { target: 'tracker', method: 'POST', path: '/tickets', body: { title: '{title}', team: '{team}' } },
  previous: { policy: 'reject' },
};
const deployR1 = { revision: 1, input: object({ branch }, ['branch']), ssh: { target: 'preview', argv: ['/srv/deploy.sh', '--branch={branch}', 'us-east-preview'] } };
const deployR2 = {
  revision: 2,
  input: object({ branch, region }, ['branch', 'region']),
  ssh: { target: 'preview', argv: ['/srv/deploy.sh', '--branch={branch}', '{region}'] },
  previous: { policy: 'adapt', defaults: { region: 'us-east-preview' } },
};

export type DemoAcceptance = 1 | 2;

export function demoCatalogText(t: DemoTargets, acceptance: DemoAcceptance): string {
  const catalog = {
    version: 1,
    targets: {
      tracker: { http: { origin: t.httpOrigin, credential: DEMO_CREDENTIALS.http, auth: 'bearer', allow_private: true, idempotency_header: true } },
      preview: { ssh: { host: '127.0.0.1', port: t.sshPort, user: t.sshUser, host_key: t.hostKey, credential: DEMO_CREDENTIALS.ssh } },
    },
    tools: {
      list_tickets: {
        description: 'List the tickets of the demo tracker.',
        effect: 'read',
        approval: 'none',
        revisions: [{ revision: 1, http: { target: 'tracker', method: 'GET', path: '/tickets' } }],
      },
      create_ticket: {
        description: 'Open a ticket in the demo tracker.',
        effect: 'write',
        approval: 'per-call',
        revisions: acceptance === 1 ? [createTicketR1] : [createTicketR1, createTicketR2],
      },
      deploy_preview: {
        description: 'Deploy a branch to a preview environment.',
        effect: 'write',
        approval: 'session',
        revisions: acceptance === 1 ? [deployR1] : [deployR1, deployR2],
      },
    },
  };
  return `# Postern demo catalog, acceptance #${acceptance} (written by \`postern demo\`)\n${stringify(catalog)}`;
}
