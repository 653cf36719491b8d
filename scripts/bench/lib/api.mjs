// One JSON API call for the benchmark scripts (scripts/bench.mjs, scripts/bench/push-bench.mjs).

/**
 * Sends `method urlPath` to `base` (e.g. http://127.0.0.1:PORT) with an optional bearer token and
 * JSON body. Output: the parsed JSON answer. Throws Error naming the call, the status and the
 * start of the body on any non-2xx answer.
 */
export async function api(base, method, urlPath, { token, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + urlPath, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${urlPath} → ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}
