/**
 * A test client for Server-Sent Events streams (issue 37; docs/api/feeds.md): opens a stream over
 * node:http (no agent, so each stream has its own connection) and collects its events.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Opens `GET path` with `Accept: text/event-stream` (and `headers`). Resolves once the response
 * head arrived to { status, headers, events: [{id, data, at (arrival, performance.now() ms)}], retry, comments, ended (a promise),
 * event(i) (resolves to the i-th event, fails after 15 s), text() (the whole body once ended),
 * close() }.
 */
export function openStream(s, path, token, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get(s.url + path, { agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers } }, (res) => {
      const st = { status: res.statusCode, headers: res.headers, events: [], comments: [], retry: null, body: '', done: false };
      const wake = new Set();
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        st.body += chunk;
        buf += chunk;
        for (let i = buf.indexOf('\n\n'); i !== -1; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) st.comments.push(line);
            else if (line.startsWith('retry: ')) st.retry = Number(line.slice(7));
            else if (line.startsWith('id: ')) ev.id = line.slice(4);
            else if (line.startsWith('data: ')) ev.data = (ev.data === undefined ? '' : `${ev.data}\n`) + line.slice(6);
          }
          if (ev.data !== undefined) {
            ev.at = performance.now();
            st.events.push(ev);
          }
        }
        for (const w of wake) w();
      });
      st.ended = new Promise((r) => res.on('end', () => {
        st.done = true;
        for (const w of wake) w();
        r();
      }));
      st.event = (i) =>
        new Promise((ok, fail) => {
          const timer = setTimeout(() => fail(new Error(`no event ${i} within 15 s (have ${st.events.length})`)), 15_000);
          const check = () => {
            if (st.events.length > i) {
              clearTimeout(timer);
              wake.delete(check);
              ok(st.events[i]);
            } else if (st.done) {
              clearTimeout(timer);
              wake.delete(check);
              fail(new Error(`the stream ended with ${st.events.length} events, waiting for event ${i}`));
            }
          };
          wake.add(check);
          check();
        });
      st.text = async () => {
        await st.ended;
        return st.body;
      };
      st.close = () => req.destroy();
      resolve(st);
    });
    req.on('error', reject);
  });
}

/** The page an event carries. */
export const pageOf = (ev) => JSON.parse(ev.data);
