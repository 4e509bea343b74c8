/**
 * Gemini CLI driven end to end, headless, against a fake model endpoint on loopback:
 * a read tool, approvals before and after the host's tool timeout, the daemon
 * down then up, the canary search, the recorded version (test/helpers/host-runs.ts).
 */
import { describeHostRuns } from '../helpers/host-runs.js';

describeHostRuns('gemini');
