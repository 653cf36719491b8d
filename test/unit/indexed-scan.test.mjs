/**
 * Issue 29, one indexed scan: messages and knowledge are searched by the same scan
 * (domain/indexed-scan.ts). Whatever the index covers, proposes or throws, a search answers what
 * a plain scan answers: the index only proposes candidates (a superset), each is re-checked
 * against its text, the tail the index does not cover is scanned, hidden text is never found.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import stableStringify from 'fast-json-stable-stringify';
import { apply, createState } from '../../dist/domain/state.js';
import { queryMessages } from '../../dist/domain/forum/forum.js';
import { knowledgeSeqOf, queryKnowledge } from '../../dist/domain/knowledge/knowledge.js';
import { readerOf } from '../../dist/domain/moderation/moderation.js';
import { indexedScan } from '../../dist/domain/indexed-scan.js';
import { NgramIndexDamagedError } from '../../dist/store/search/index.js';
import { SEARCH_SCAN_CANDIDATES_MAX } from '../../dist/constants.js';

const T = '2026-01-01T00:00:00.000Z';
const WORDS = ['needle', 'hay', 'Straw', 'ÉCLAIR', 'stack'];
const pad = (n) => String(n).padStart(10, '0');

/** A state with more messages and knowledge revisions than SEARCH_SCAN_CANDIDATES_MAX, mixed. */
function bigState() {
  const state = createState();
  let seq = 1;
  const rec = (type, payload) => {
    const json = stableStringify(payload);
    apply(state, { seq, time: T, type, payload: JSON.parse(json) }, json);
    seq++;
  };
  rec('room.create', { id: 'commons', name: 'C', description: '', created: T });
  const topics = [];
  for (let t = 0; t < 3; t++) {
    topics.push(`tp_${pad(seq)}`);
    rec('topic.create', { id: `tp_${pad(seq)}`, roomId: 'commons', authorId: 'ag_a', title: 't', created: T });
  }
  const kn = [];
  for (let i = 0; i < 3 * SEARCH_SCAN_CANDIDATES_MAX; i++) {
    const text = `${WORDS[i % 5]} ${WORDS[(i * 7) % 5]} ${i}`;
    if (i % 3 === 0) {
      const revise = kn.length > 0 && i % 2 === 0 ? kn[i % kn.length] : undefined;
      const id = revise?.id ?? `kn_${pad(seq)}`;
      const revision = revise ? revise.revision + 1 : 1;
      rec('knowledge.publish', { id, revision, authorId: i % 4 === 0 ? 'ag_b' : 'ag_a', title: WORDS[i % 5], content: text, category: 'opinion', sources: [], topicId: null, created: T });
      if (revise) revise.revision = revision;
      else kn.push({ id, revision });
    } else {
      rec('message.create', { id: `msg_${pad(seq)}`, topicId: topics[i % 3], authorId: i % 4 === 0 ? 'ag_b' : 'ag_a', content: text, replyTo: null, clientId: `c${i}`, created: T });
    }
  }
  return { state, head: seq - 1, topics };
}

/**
 * A stand-in for the n-gram index covering seqs up to `throughSeq`: it proposes every seq in
 * (0, throughSeq] below beforeSeq, newest first — the loosest superset an index may give.
 */
function everySeqIndex(throughSeq) {
  return {
    throughSeq,
    *candidates(lq, { beforeSeq = Infinity }) {
      for (let seq = Math.min(throughSeq, beforeSeq - 1); seq >= 1; seq--) yield seq;
    },
  };
}

/** An index whose shard turns out damaged once read: the query scans instead. */
const damagedIndex = {
  throughSeq: 100,
  *candidates() {
    yield 99;
    throw new NgramIndexDamagedError('x.ngram', 1, 'flipped bit');
  },
};

const messageQueries = (topics) => [
  { q: 'needle', limit: 1000 }, { q: 'éclair', limit: 5 }, { q: 'STRAW', limit: 1000, agentId: 'ag_b' }, { q: 'hay', limit: 1000, topicId: topics[1] },
  { q: 'absent', limit: 10 }, { q: 'a', limit: 300 },
];
const knowledgeQueries = [
  { q: 'needle', history: true, limit: 1000 }, { q: 'needle', history: false, limit: 1000 }, { q: 'éclair', history: true, limit: 3 },
  { q: 'straw', history: false, limit: 1000, agentId: 'ag_a' }, { q: 'absent', history: true, limit: 10 },
];

test('a message search through the index answers what a plain scan answers, whatever the index covers', async () => {
  const { state, head, topics } = bigState();
  const reader = readerOf(state.moderation, 'agent');
  for (const query of messageQueries(topics)) {
    const scanned = await queryMessages(state.forum, query, null, reader);
    for (const through of [0, 1, Math.floor(head / 2), head]) {
      assert.deepEqual(await queryMessages(state.forum, query, everySeqIndex(through), reader), scanned, `${JSON.stringify(query)} through ${through}`);
    }
    assert.deepEqual(await queryMessages(state.forum, query, damagedIndex, reader), scanned, 'a damaged shard falls back to the scan');
  }
});

test('a knowledge search through the index answers what a plain scan answers, whatever the index covers', async () => {
  const { state, head } = bigState();
  const reader = readerOf(state.moderation, 'agent');
  for (const query of knowledgeQueries) {
    const scanned = await queryKnowledge(state.knowledge, query, null, reader);
    for (const through of [0, 1, Math.floor(head / 2), head]) {
      assert.deepEqual(await queryKnowledge(state.knowledge, query, everySeqIndex(through), reader), scanned, `${JSON.stringify(query)} through ${through}`);
    }
    assert.deepEqual(await queryKnowledge(state.knowledge, query, damagedIndex, reader), scanned, 'a damaged shard falls back to the scan');
  }
});

test('an index hit is re-checked against its text: a candidate whose text does not match is not returned', async () => {
  const { state, head } = bigState();
  const reader = readerOf(state.moderation, 'agent');
  const rows = await queryMessages(state.forum, { q: 'absent', limit: 10 }, everySeqIndex(head), reader);
  assert.deepEqual(rows, []);
  const entries = await queryKnowledge(state.knowledge, { q: 'absent', history: true, limit: 10 }, everySeqIndex(head), reader);
  assert.deepEqual(entries, []);
});

test('hidden text is never found through the index, for messages and for knowledge', async () => {
  const { state, head } = bigState();
  const reader = readerOf(state.moderation, 'agent');
  const before = await queryMessages(state.forum, { q: 'needle', limit: 1000 }, everySeqIndex(head), reader);
  const kBefore = await queryKnowledge(state.knowledge, { q: 'needle', history: true, limit: 1000 }, everySeqIndex(head), reader);
  assert.ok(before.length > 2 && kBefore.length > 2);
  const hiddenSeq = state.forum.rows.seq.at(before[1]);
  state.moderation.hidden.add(`s:${hiddenSeq}`);
  state.moderation.hidden.add(`s:${knowledgeSeqOf(state.knowledge, kBefore[1])}`);
  const after = await queryMessages(state.forum, { q: 'needle', limit: 1000 }, everySeqIndex(head), reader);
  const kAfter = await queryKnowledge(state.knowledge, { q: 'needle', history: true, limit: 1000 }, everySeqIndex(head), reader);
  assert.deepEqual(after, before.filter((_, i) => i !== 1));
  assert.deepEqual(kAfter, kBefore.filter((_, i) => i !== 1));
});

test('the scan yields to the event loop between slices, also when no candidate matches', async () => {
  let calls = 0;
  let turns = 0;
  const timer = setInterval(() => turns++, 0);
  const items = Array.from({ length: 4000 }, (_, i) => i + 1);
  const busyMs = (ms) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  const out = await indexedScan(null, 'x', {
    lowest: 0, from: items.length, at: (i) => items[i], seqOf: (n) => n, bySeq: (n) => n, filter: () => true,
    matches: () => (calls++, busyMs(0.05), false), limit: 10,
  });
  clearInterval(timer);
  assert.deepEqual(out, []);
  assert.equal(calls, items.length);
  assert.ok(turns >= 5, `the event loop ran ${turns} times during a ~200 ms scan`);
});
