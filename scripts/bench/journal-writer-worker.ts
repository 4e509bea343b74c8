/**
 * The worker side of scripts/bench/journal-writer.ts: the Activity journal
 * and its group commit on a connection of this thread, fed intents and
 * outcomes by messages and answering each once it is durable.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openJournals } from '../../src/journal/index.js';
import { GroupCommit } from '../../src/daemon/pipeline/group-commit.js';
import type { CallRecord, OutcomeInput, TargetDetails } from '../../src/journal/index.js';

type Ask = { id: number; op: 'intent'; rec: CallRecord & { target: TargetDetails } } | { id: number; op: 'outcome'; call_id: string; outcome: OutcomeInput } | { id: number; op: 'close' };

const port = parentPort!;
const journals = openJournals((workerData as { dir: string }).dir, { exclusive: true });
let inflight = 0;
const commits = new GroupCommit(journals.activity, { busy: () => inflight > 1 });
port.on('message', (m: Ask) => {
  if (m.op === 'close') {
    journals.close();
    port.postMessage({ id: m.id, ok: true });
    return;
  }
  inflight++;
  const p = m.op === 'intent' ? commits.intent(m.rec) : commits.outcome(m.call_id, m.outcome);
  p.then(
    (value) => port.postMessage({ id: m.id, ok: true, value }),
    (e: unknown) => port.postMessage({ id: m.id, ok: false, error: String(e) }),
  ).finally(() => inflight--);
});
