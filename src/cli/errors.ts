/**
 * The CLI's own errors, the ones that exit 2 (src/cli.ts), in a module on nothing else so the lean
 * CLI entry can tell them apart without loading the archive commands (issue 51).
 */

/** A usage error: unknown command or flag, missing value or required option, stray word. Exit 2. */
export class UsageError extends Error {}

/**
 * Thrown when a command that replaces live data was not confirmed (no --yes, and no terminal to
 * ask, or a "no" typed there). Nothing was changed; the CLI exits 2 with the message.
 */
export class ConfirmationRequired extends Error {
  override name = 'ConfirmationRequired';
}
