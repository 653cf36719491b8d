/**
 * Raw-socket helper for tests that speak malformed HTTP (issues 8, 20, 21).
 */
import { connect } from 'node:net';

/**
 * Sends `chunks` on a new socket to the server at `url` (`delayMs` between chunks) and resolves to
 * everything the server answered once the connection closes. `endAfter` false keeps the writing
 * side open, so only the server can end the exchange. Rejects when nothing closes within 20 s.
 */
export function rawExchange(url, chunks, { delayMs = 0, endAfter = true } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let out = '';
    sock.on('data', (d) => (out += d));
    sock.on('error', () => resolve(out));
    sock.on('close', () => resolve(out));
    sock.on('connect', async () => {
      for (const c of chunks) {
        if (sock.destroyed) break;
        sock.write(c);
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      }
      if (endAfter && !sock.destroyed) sock.end();
    });
    setTimeout(() => reject(new Error(`no close within 20s; got ${out.slice(0, 200)}`)), 20000).unref();
  });
}
