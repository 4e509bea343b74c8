/**
 * The starter catalog `postern catalog new` writes: one HTTP target reached
 * with the quickstart's secret (`github`, kind `http_bearer`) and one read
 * tool, commented so that the first edit needs no other page. It passes
 * `postern catalog check` as written (a test holds it to that), and it is
 * only ever created new: an existing catalog is never replaced.
 */
import { closeSync, writeSync } from 'node:fs';
import { openNewPrivateFile } from './new-file.js';

/** The secret the starter's target names; the quickstart adds it with `postern secret add github --kind http_bearer`. */
export const STARTER_SECRET = 'github';

export const STARTER_CATALOG = `# Postern catalog: the whole of what an agent may do (reference: docs/catalog.md).
# Nothing here is used until you run \`postern catalog check\` and \`postern catalog accept\`.
version: 1

# Targets: where calls go, and which vault secret reaches them. The agent never sees the
# secret, and never chooses a host: only the tools below do.
targets:
  github:
    # credential: the name given to \`postern secret add ${STARTER_SECRET} --kind http_bearer\`
    http: { origin: "https://api.github.com", credential: ${STARTER_SECRET}, auth: bearer }

# Tools: what the agent sees (a name, a description, typed arguments). Each tool has
# revisions; the last one is current. Change a tool by adding a revision, not by editing one.
tools:
  github_get_issue:
    description: Read one issue of a repository.
    effect: read          # read | write | destructive (write and destructive need an idempotency_key)
    approval: none        # none | session | per-call
    revisions:
      - revision: 1
        input:
          type: object
          required: [owner, repo, number]
          properties:
            owner: { type: string, pattern: "^[A-Za-z0-9-]{1,39}$" }
            repo: { type: string, pattern: "^[A-Za-z0-9._-]{1,100}$" }
            number: { type: integer, minimum: 1 }
        http:
          target: github
          method: GET
          path: /repos/{owner}/{repo}/issues/{number}
          headers: { Accept: application/vnd.github+json }

  # A write tool, to start from (uncomment; it asks the operator for each call):
  # github_create_issue:
  #   description: Open an issue in a repository.
  #   effect: write
  #   approval: per-call
  #   revisions:
  #     - revision: 1
  #       input:
  #         type: object
  #         required: [owner, repo, title]
  #         properties:
  #           owner: { type: string, pattern: "^[A-Za-z0-9-]{1,39}$" }
  #           repo: { type: string, pattern: "^[A-Za-z0-9._-]{1,100}$" }
  #           title: { type: string, maxLength: 256 }
  #       http:
  #         target: github
  #         method: POST
  #         path: /repos/{owner}/{repo}/issues
  #         body: { title: "{title}" }
`;

/** Creates `file` (mode 600) holding the starter catalog; FILE_IO when it already exists. */
export function writeStarterCatalog(file: string): void {
  const fd = openNewPrivateFile(file, 'cannot write the starter catalog to');
  try {
    writeSync(fd, STARTER_CATALOG);
  } finally {
    closeSync(fd);
  }
}
