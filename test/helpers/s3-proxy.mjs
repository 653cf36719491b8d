/**
 * The issue 35 tests' view of the fault proxy (fault-proxy.mjs): the server under test is pointed
 * at the proxy (AWS_ENDPOINT_URL_S3), and the test decides what the object store does — answer
 * normally, be down (every connection reset), or lose the answer of the next PUT to a chunk (the
 * PUT reaches the store; its response never reaches the server, as when a connection drops after
 * the store committed the write). The full set of faults is on `faults` (fault-proxy.mjs).
 */
import { faultProxy } from './fault-proxy.mjs';

/**
 * Starts a proxy to `upstream` (http://host:port) on 127.0.0.1 and a free port; stopped after the
 * test. Resolves to { endpoint, setMode(mode), dropNextPutResponse(pattern), counts, faults },
 * where mode is 'up' or 'down', counts has `puts` (PUTs that arrived), `dropped` (answers lost)
 * and `refused` (requests reset while down), and `faults` is the fault-proxy.mjs handle.
 */
export async function s3Proxy(t, upstream) {
  const proxy = await faultProxy(upstream);
  t.after(() => proxy.close());
  let down = null;
  const counts = {
    get puts() {
      return proxy.counts.requests.PUT;
    },
    get dropped() {
      return proxy.counts.faults.lostAnswer;
    },
    get refused() {
      return proxy.counts.faults.refuse;
    },
  };
  return {
    endpoint: proxy.endpoint,
    counts,
    faults: proxy,
    /** 'up': forward everything; 'down': reset every connection (kept-alive ones too). */
    setMode(next) {
      if (next === 'down' && down === null) down = proxy.addFault({ kind: 'refuse' });
      if (next === 'up' && down !== null) {
        proxy.removeFault(down);
        down = null;
      }
    },
    /** The next PUT whose path matches `pattern` is forwarded, but its answer is never delivered. */
    dropNextPutResponse(pattern) {
      proxy.addFault({ kind: 'lostAnswer', methods: ['PUT'], key: pattern, count: 1 });
    },
  };
}
