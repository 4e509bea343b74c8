/**
 * `postern setup gemini` names Gemini CLI's trusted-folders file and its
 * format, with the folder it was run in as the entry to add.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostNote } from '../../../../src/cli/setup/hosts.js';

describe('setup gemini: the trusted-folders step', () => {
  it('names the file under the user home and an entry for the current folder, in the file\'s own format', () => {
    const note = hostNote('gemini', { userHome: '/home/ann', cwd: '/home/ann/project' }) ?? '';
    assert.ok(note.includes('/home/ann/.gemini/trustedFolders.json'), note);
    const entry = /e\.g\. (\{.*?\});/.exec(note)?.[1];
    assert.ok(entry !== undefined, note);
    assert.deepEqual(JSON.parse(entry), { '/home/ann/project': 'TRUST_FOLDER' });
    assert.match(note, /TRUST_PARENT/);
  });
});
