/**
 * Reads the black-box tests share: a response body asserted by status, and a whole topic export
 * with every record's checksum verified (part 4 /api/exchange, forum-exchange-v1).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

/** Awaits a test-server response, asserts its status (default 200) and returns its body. */
export async function ok(resPromise, status = 200) {
  const res = await resPromise;
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
}

/**
 * Every record of topic `topicId`'s export as the token's reader sees it, paged with the pinned
 * cursor; asserts each record's sha256 over its canonical JSON. Each record's `proof` (issue 53)
 * is left out: it is against the checkpoint of the export's pinned size, so it changes as the
 * archive grows (test/http/checkpoints.test.mjs checks proofs).
 */
export async function exportOf(s, token, topicId) {
  const out = [];
  let q = `topicId=${topicId}`;
  for (;;) {
    const page = await ok(s.get(`/api/exchange?${q}`, token));
    for (const r of page.records) {
      assert.equal(createHash('sha256').update(r.canonicalJson, 'utf8').digest('hex'), r.sha256, `checksum of record ${r.seq}`);
      const { proof: _proof, ...record } = r;
      out.push(record);
    }
    if (!page.hasMore) return out;
    const c = page.cursor;
    q = `topicId=${topicId}&after=${c.after}&through=${c.through}&originId=${c.originId}`;
  }
}

/**
 * The caught-up cursor of the feed or inbox at `path` for `token`, as the query string of its
 * next page (`after=N&originId=…`): pages from the start until one has no more.
 */
export async function caughtUpQuery(s, path, token) {
  let q = 'after=0';
  for (;;) {
    const page = (await s.get(`${path}?${q}&limit=100`, token)).body;
    q = `after=${page.cursor.after}&originId=${page.cursor.originId}`;
    if (!page.hasMore) return q;
  }
}
