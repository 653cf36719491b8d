/**
 * The CLI's side of a data folder's local admin channel (src/admin/channel.ts): where its Unix
 * socket is, and one command sent over it. A module on node built-ins only (node:net, not
 * node:http, whose client costs a CLI start about as much again), so a command the running server
 * answers starts about as fast as `node -e 0` (issue 51: the CLI loads only what a command needs).
 */
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type * as Crypto from 'node:crypto';

/** Unix socket paths are limited to ~107 bytes; longer data paths use a hashed name in tmpdir. */
const SOCKET_PATH_MAX = 100;

/**
 * Path of the admin socket for a data folder: `<dataDir>/admin.sock`, or, when that is longer than
 * SOCKET_PATH_MAX bytes, `<tmpdir>/agent-forum-<first 16 hex of sha256(dataDir)>.sock`.
 */
export function adminSocketPath(dataDir: string): string {
  const inDir = join(dataDir, 'admin.sock');
  if (Buffer.byteLength(inDir) <= SOCKET_PATH_MAX) return inDir;
  // node:crypto only for the long paths: loading it costs a CLI start about a tenth of `node -e 0`.
  const { createHash } = createRequire(import.meta.url)('node:crypto') as typeof Crypto;
  return join(tmpdir(), `agent-forum-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}.sock`);
}

/** What an admin-channel request answered: the HTTP status and the body's text. */
export interface ChannelAnswer {
  status: number;
  body: string;
}

/**
 * Parses the whole of one HTTP/1.1 answer of the admin channel (read up to the connection's close):
 * its status line and its Content-Length body (the channel always sends one: src/http/reply.ts
 * sendReply, sendError). Throws an Error naming what is wrong for anything else.
 */
export function parseChannelAnswer(raw: Buffer): ChannelAnswer {
  const headEnd = raw.indexOf('\r\n\r\n');
  const lines = (headEnd < 0 ? '' : raw.subarray(0, headEnd).toString('latin1')).split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0] ?? '')?.[1];
  const length = lines.map((l) => /^content-length:\s*(\d+)\s*$/i.exec(l)?.[1]).find((v) => v !== undefined);
  const body = raw.subarray(headEnd + 4);
  if (status === undefined || length === undefined || body.length < Number(length)) {
    throw new Error(`the admin channel's answer is not a complete HTTP/1.1 response with a Content-Length (${raw.length} bytes)`);
  }
  return { status: Number(status), body: body.subarray(0, Number(length)).toString('utf8') };
}

/**
 * Sends `POST /<name>` with the JSON `body` over the Unix socket at `socketPath` and resolves to the
 * answer (parseChannelAnswer), or to null when nothing listens there (ENOENT: no socket file;
 * ECONNREFUSED: a stale one): then nothing was sent. Rejects with any other socket error as it is.
 */
export function postToChannel(socketPath: string, name: string, body: string): Promise<ChannelAnswer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let connected = false;
    const socket = connect(socketPath, () => (connected = true));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) resolve(null);
      else reject(err);
    });
    socket.on('end', () => {
      try {
        resolve(parseChannelAnswer(Buffer.concat(chunks)));
      } catch (err) {
        reject(err as Error);
      }
    });
    const head = `POST /${name} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
    // Not end(): the server would take the half-close for an abandoned request. It closes the
    // connection after its answer (connection: close).
    socket.write(head + body);
  });
}
