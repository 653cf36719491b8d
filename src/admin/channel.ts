/**
 * The local-only admin channel: HTTP over a Unix domain socket in the data folder (mode 0600),
 * never on the public listener. `POST /<group>.<verb>` with a JSON object runs that command, as
 * the operator its `as` or `operatorToken` names (src/admin/commands.ts `operatorOfArgs`).
 */
import { createServer, type Server } from 'node:http';
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import type { App } from '../app.js';
import { readJsonBody } from '../http/body.js';
import { notFound } from '../errors.js';
import { sendError, sendReply, toServiceError } from '../http/reply.js';
import { commands, operatorOfArgs } from './commands.js';
import { adminSocketPath } from './socket-path.js';

/** Starts the admin channel for `app`; resolves to the listening server. */
export async function startAdminChannel(app: App): Promise<Server> {
  const path = adminSocketPath(app.config.dataDir);
  // We hold the data folder's lock, so a socket file left here is from a dead process.
  if (existsSync(path)) unlinkSync(path);
  const server = createServer((req, res) => {
    void (async () => {
      try {
        const name = (req.url ?? '/').slice(1);
        const command = commands[name];
        if (!command || req.method !== 'POST') throw notFound(`no admin command "${name}"`);
        const args = ((await readJsonBody(req)) as Record<string, unknown> | null) ?? {};
        // `as` / `operatorToken` name who runs it (issue 38); `cli` without them.
        const result = await command(app, args, operatorOfArgs(app, args));
        sendReply(res, { status: 200, body: result }, false);
      } catch (err) {
        sendError(res, toServiceError(err));
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return server;
}
