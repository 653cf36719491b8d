// A lean HTTP/1.1 GET client for the push benchmark's long-poll waiters (scripts/bench/push-bench.mjs).
//
// Why not undici: on the 2-core machine the benchmark's 1,000 simulated followers share the cores
// with the server and wrk, so what they cost is taken from the writes being measured. Measured
// there (1,000 held /api/inbox long polls woken 1,000 times a second, no other load), undici's
// Pool cost the harness 199–234 µs of CPU per page (its dispatcher scans its 1,000 clients for a
// free one on every request; one Client per waiter: 181 µs), this client about 70 µs — as wrk
// does for the write load, the load generator should cost little beside the server it measures.
// It speaks only what the feeds answer: a GET on a keep-alive connection, a response with
// Content-Length (a chunked one is an error), no redirects, no pipelining.
import net from 'node:net';

const HEADER_END = Buffer.from('\r\n\r\n');

/** One keep-alive connection to `base` (http://host:port) that sends GETs one at a time. */
export class LeanConnection {
  /**
   * Input: `base` (http://127.0.0.1:PORT) and `headers`, extra request header lines sent with
   * every request (e.g. { authorization: 'Bearer …' }).
   */
  constructor(base, headers = {}) {
    const url = new URL(base);
    this.host = url.hostname;
    this.port = Number(url.port);
    this.extra = `Host: ${url.host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    this.socket = null;
    this.pending = null;
    this.buffered = null;
    this.closed = false;
  }

  /**
   * Sends `GET path` and resolves to { status, body } (body: a Buffer) once the whole response
   * has arrived. Connects (again) when needed. Rejects when the connection fails or closes before
   * the response is complete, on a response without Content-Length, and after `close()`.
   */
  get(path) {
    if (this.closed) return Promise.reject(new Error('connection closed by the harness'));
    if (this.socket === null) this.connect();
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(`GET ${path} HTTP/1.1\r\n${this.extra}`, 'latin1');
    });
  }

  /** Closes the connection; a request in flight rejects. */
  close() {
    this.closed = true;
    this.socket?.destroy();
  }

  connect() {
    const socket = net.connect(this.port, this.host);
    socket.setNoDelay(true);
    this.socket = socket;
    this.buffered = null;
    socket.on('data', (chunk) => this.onData(chunk));
    const fail = (err) => {
      if (this.socket !== socket) return; // a connection already let go of
      this.socket = null;
      const p = this.pending;
      this.pending = null;
      p?.reject(err ?? new Error('the server closed the connection before answering'));
    };
    socket.on('error', fail);
    socket.on('close', () => fail(null));
  }

  onData(chunk) {
    const buf = this.buffered === null ? chunk : Buffer.concat([this.buffered, chunk]);
    const headEnd = buf.indexOf(HEADER_END);
    if (headEnd === -1) {
      this.buffered = buf;
      return;
    }
    const head = buf.toString('latin1', 0, headEnd);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length === null) {
      this.buffered = null;
      this.socket.destroy(new Error(`a response without Content-Length: ${head.slice(0, 200)}`));
      return;
    }
    const end = headEnd + 4 + Number(length[1]);
    if (buf.length < end) {
      this.buffered = buf;
      return;
    }
    this.buffered = buf.length > end ? buf.subarray(end) : null;
    const status = Number(head.slice(9, 12));
    const p = this.pending;
    this.pending = null;
    // The server ends the connection after this response: the next request opens a new one.
    if (/\r\nconnection: *close/i.test(head)) {
      this.socket.removeAllListeners('close');
      this.socket.destroy();
      this.socket = null;
    }
    p?.resolve({ status, body: buf.subarray(headEnd + 4, end) });
  }
}
