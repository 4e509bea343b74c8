/**
 * The approval as the SSH gateway's approval stage still takes it
 * (src/daemon/ssh-gateway/stages.ts): `obtainApproval` gives the approved
 * record or throws ApprovalEnded, where the call's own approval stage takes
 * the ending as data (stages/approval/ask.ts, `askApproval`). Only an adapter:
 * the card, the wait and every way it ends are decided there. It goes when
 * the gateway's stage takes `askApproval`'s result.
 */
import type { PosternError } from '../../rules/errors.js';
import { askApproval, type ApprovalSubject } from './stages/approval/ask.js';
import type { CallRequest, Services, SessionInfo } from './context.js';
import type { JournalApproval } from './trail.js';

export type { ApprovalSubject } from './stages/approval/ask.js';

/** Carries the journal's approval record along with the error that ends the call. */
export class ApprovalEnded extends Error {
  constructor(
    readonly record: JournalApproval,
    readonly error: PosternError,
    /** The card was withdrawn because the accepted catalog changed. */
    readonly contractChanged = false,
  ) {
    super(error.message);
  }
}

export async function obtainApproval(svc: Services, session: SessionInfo, req: CallRequest, s: ApprovalSubject): Promise<JournalApproval> {
  const asked = await askApproval(svc, session, req, s);
  if (asked.kind === 'approved') return asked.record;
  throw new ApprovalEnded(asked.record, asked.error, asked.contractChanged);
}
