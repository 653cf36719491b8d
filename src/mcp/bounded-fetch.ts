/**
 * The stdio MCP server's fetch (issue 51 defect 5): `fetch` with a bound on the bytes of one
 * answer, applied while the body is read. The client helper (forum-client.mjs) reads an answer
 * whole (`res.text()`) before anything can look at its size, so a forum (or anything answering
 * at FORUM_URL) that sent 300 MB took the process to ~2 GiB before the tool layer refused the
 * result. Given to the helper as its `fetch` option, this reads the body chunk by chunk, and when
 * the running total passes the bound it cancels the body and aborts the request (the connection
 * is closed; nothing more is read) and rejects with AnswerTooLargeError. A Content-Length over
 * the bound is refused before any of the body is read.
 *
 * The helper reports a rejected fetch as "no response" (status 0, the error as `cause`); the
 * tool layer finds AnswerTooLargeError in the cause chain and says what to do (src/mcp/server.ts
 * errorAdvice). Memory held for one answer: at most `limitBytes` of chunks plus their copy.
 */

/** The refusal of an answer over the bound: `limitBytes` (the bound) and what was seen of it. */
export class AnswerTooLargeError extends Error {
  constructor(
    /** The bound, in bytes (MCP_STDIO_ANSWER_BYTES_MAX). */
    readonly limitBytes: number,
    /** Content-Length when the answer declared one over the bound, else null (it was cut while read). */
    readonly declaredBytes: number | null,
  ) {
    super(
      declaredBytes === null
        ? `the forum's answer passed ${limitBytes} bytes, the bound on one answer this MCP server reads (MCP_STDIO_ANSWER_BYTES_MAX); it stopped reading there`
        : `the forum's answer declares ${declaredBytes} bytes, over the ${limitBytes}-byte bound on one answer this MCP server reads (MCP_STDIO_ANSWER_BYTES_MAX); it was not read`,
    );
    this.name = 'AnswerTooLargeError';
  }
}

/** True when `err` or an error in its `cause` chain (at most 8 deep) is an AnswerTooLargeError. */
export function answerTooLarge(err: unknown): AnswerTooLargeError | null {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && e instanceof Error; depth++) {
    if (e instanceof AnswerTooLargeError) return e;
    e = e.cause;
  }
  return null;
}

/**
 * `fetch` (same signature) whose answers are at most `limitBytes` of body. Resolves to a Response
 * holding the whole body (already read) with the upstream's status and headers; answers without
 * a body (204, 304) and redirects (the helper refuses them unread) are returned as they came.
 * Rejects with AnswerTooLargeError when the body passes `limitBytes` (the request is aborted, so
 * the server sees the connection closed), and with fetch's own errors otherwise.
 */
export function boundedFetch(limitBytes: number, fetchImpl: typeof fetch = globalThis.fetch.bind(globalThis)): typeof fetch {
  return async (input, init) => {
    const controller = new AbortController();
    const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
    const res = await fetchImpl(input, { ...init, signal });
    if (res.body === null || res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) return res;
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > limitBytes) {
      controller.abort();
      await res.body.cancel().catch(() => undefined);
      throw new AnswerTooLargeError(limitBytes, declared);
    }
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limitBytes) {
        chunks.length = 0;
        controller.abort();
        await reader.cancel().catch(() => undefined);
        throw new AnswerTooLargeError(limitBytes, null);
      }
      chunks.push(value);
    }
    return new Response(Buffer.concat(chunks, total), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
