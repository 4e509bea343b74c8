/**
 * The credential, twice. Before any approval: a credential missing from the
 * vault (e.g. after `secret rm`) or of the wrong kind fails the call; no
 * operator is asked and nothing is sent. After the approval: the vault may
 * have changed while the operator decided, so the value in force now is
 * taken as a copy this call keeps to the end (a rotate meanwhile never mixes
 * secrets within one call) and zeroed when the call ends.
 */
import type { ResolvedAction } from '../../../contracts/index.js';
import { assertCredentialFits } from '../../../rules/credential-fit.js';
import { PosternError } from '../../../rules/errors.js';
import type { Credential } from '../../../vault/index.js';
import type { Services } from '../context.js';
import { holding, need, type CallState } from './call-state.js';
import { next, refuse, type Step } from './step.js';

/** The credential of the action, present and fitting its target (src/rules/credential-fit.ts). */
export function checkCredential(action: ResolvedAction, cred: Credential | undefined): Credential {
  if (cred === undefined) {
    throw new PosternError('CREDENTIAL_MISSING', `the credential "${action.credential}" is not in the vault: add it with \`postern secret add ${action.credential}\``);
  }
  assertCredentialFits(action.kind === 'http' ? { kind: 'http', auth: action.auth } : { kind: 'ssh' }, cred.meta, action.target);
  return cred;
}

/** What the credential stages read of the services: the vault file followed, and the vault in use. */
type CredentialServices = Pick<Services, 'vaultFile' | 'state'>;

export async function credentialPresent(call: CallState): Promise<Step> {
  const svc: CredentialServices = call.svc;
  await svc.vaultFile.refresh();
  const plan = need(call, 'plan');
  checkCredential(plan.action, svc.state.vault().get(plan.action.credential));
  return next(call);
}

export async function takeCredential(call: CallState): Promise<Step> {
  const svc: CredentialServices = call.svc;
  await svc.vaultFile.refresh();
  const { action } = need(call, 'plan');
  const vault = svc.state.vault();
  const taken = svc.state.takeCredential(action.credential);
  const kept = holding(call, () => {
    for (const part of Object.values(taken?.secret ?? {})) part.fill(0);
  });
  // A refusal here still zeroes the copy: the orchestrator undoes `kept`'s releases.
  try {
    return next({ ...kept, held: { vault, credential: checkCredential(action, taken) } });
  } catch (e) {
    return refuse(e, kept);
  }
}
