import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.mjs';

const FIELDS = ['id', 'revision', 'authorId', 'title', 'content', 'category', 'sources', 'topicId', 'created'];
const base = { title: 'A finding', content: 'Some content.', category: 'opinion' };
const ids = (list) => list.map((k) => `${k.id}@${k.revision}`);

test('a new knowledge item is revision 1 with exactly the fields of part 2, trimmed text and defaults', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const res = await s.post('/api/knowledge', { title: '  Title  ', content: '\n body \t', category: 'hypothesis' }, a.token);
  assert.equal(res.status, 201);
  assert.deepEqual(Object.keys(res.body).sort(), [...FIELDS].sort());
  assert.match(res.body.id, /^kn_\d+$/);
  assert.equal(res.body.revision, 1);
  assert.equal(res.body.authorId, a.id);
  assert.equal(res.body.title, 'Title');
  assert.equal(res.body.content, 'body');
  assert.deepEqual(res.body.sources, []);
  assert.equal(res.body.topicId, null);
  assert.ok(!Number.isNaN(Date.parse(res.body.created)));

  const topic = (await s.post('/api/topics', { title: 't' }, a.token)).body;
  const withTopic = await s.post('/api/knowledge', { ...base, topicId: topic.id, sources: ['HTTP://Example.org/a', 'https://x.y'] }, a.token);
  assert.equal(withTopic.status, 201);
  assert.equal(withTopic.body.topicId, topic.id);
  assert.deepEqual(withTopic.body.sources, ['HTTP://Example.org/a', 'https://x.y']);
  assert.notEqual(withTopic.body.id, res.body.id, 'new items are not idempotent: each gets a new id');
});

test('every KnowledgeInput rule is enforced: 400 naming the rule, 404 for an unknown topic', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const cases = [
    [{ content: 'c', category: 'opinion' }, /title/],
    [{ ...base, title: '   ' }, /title/],
    [{ ...base, title: 'x'.repeat(161) }, /title.*160/],
    [{ title: 't', category: 'opinion' }, /content/],
    [{ ...base, content: ' \n ' }, /content/],
    [{ ...base, content: 'x'.repeat(12001) }, /content.*12000/],
    [{ title: 't', content: 'c' }, /category/],
    [{ ...base, category: 'fact' }, /category.*evidence/],
    [{ ...base, sources: 'https://x' }, /sources/],
    [{ ...base, sources: ['ftp://x'] }, /sources/],
    [{ ...base, sources: ['example.org'] }, /sources/],
    [{ ...base, sources: ['http://'] }, /field "sources.0" must be a URI starting with http:\/\/ or https:\/\/ \(any case\) followed by a host/],
    [{ ...base, sources: ['https://example.org/a b'] }, /field "sources.0" must be a URI/],
    [{ ...base, sources: ['https://ok.example', 'https://x/<script>'] }, /field "sources.1" must be a URI/],
    [{ ...base, sources: [`https://${'x'.repeat(993)}`] }, /sources.*1000/],
    [{ ...base, sources: Array.from({ length: 11 }, (_, i) => `https://x/${i}`) }, /sources.*10/],
    [{ ...base, sources: [42] }, /sources/],
    [{ ...base, category: 'evidence' }, /evidence.*source/],
    [{ ...base, category: 'evidence', sources: [] }, /evidence.*source/],
    [{ ...base, topicId: 'bad id' }, /topicId/],
    [{ ...base, previousId: 'kn_1' }, /expectedRevision/],
    [{ ...base, expectedRevision: 1 }, /previousId/],
    [{ ...base, previousId: 'kn_1', expectedRevision: 0 }, /expectedRevision/],
    [{ ...base, previousId: 'kn_1', expectedRevision: 1.5 }, /expectedRevision/],
    [{ ...base, previousId: 'kn_1', expectedRevision: '1' }, /expectedRevision/],
    [{ ...base, extra: true }, /unknown field "extra"/],
  ];
  for (const [body, rule] of cases) {
    const res = await s.post('/api/knowledge', body, token);
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
    assert.match(res.body.error, rule, JSON.stringify(body).slice(0, 200));
  }
  const unknownTopic = await s.post('/api/knowledge', { ...base, topicId: 'tp_nope' }, token);
  assert.equal(unknownTopic.status, 404);
  assert.match(unknownTopic.body.error, /topic/);
  assert.deepEqual((await s.get('/api/knowledge', token)).body.knowledge, [], 'refused writes publish nothing');

  const limits = {
    title: 'x'.repeat(160),
    content: 'y'.repeat(12000),
    category: 'evidence',
    sources: [`https://${'z'.repeat(992)}`, ...Array.from({ length: 9 }, (_, i) => `hTtPs://x/${i}`)],
  };
  const atLimits = await s.post('/api/knowledge', limits, token);
  assert.equal(atLimits.status, 201, JSON.stringify(atLimits.body).slice(0, 200));
  assert.equal(atLimits.body.sources.length, 10);
  assert.equal(atLimits.body.sources[0].length, 1000);
});

test('the author revises an item twice: same id, revisions 1..3, history on and off', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const first = (await s.post('/api/knowledge', { ...base, title: 'v1' }, a.token)).body;
  const other = (await s.post('/api/knowledge', { ...base, title: 'unrelated' }, a.token)).body;
  const second = await s.post('/api/knowledge', { ...base, title: 'v2', category: 'correction', previousId: first.id, expectedRevision: 1 }, a.token);
  assert.equal(second.status, 201);
  assert.equal(second.body.id, first.id);
  assert.equal(second.body.revision, 2);
  assert.equal(second.body.category, 'correction');
  const third = await s.post('/api/knowledge', { ...base, title: 'v3', sources: ['https://v3'], previousId: first.id, expectedRevision: 2 }, a.token);
  assert.equal(third.status, 201);
  assert.deepEqual([third.body.id, third.body.revision, third.body.title], [first.id, 3, 'v3']);

  const latest = await s.get('/api/knowledge', a.token);
  assert.equal(latest.status, 200);
  assert.deepEqual(Object.keys(latest.body), ['knowledge']);
  assert.deepEqual(ids(latest.body.knowledge), [`${first.id}@3`, `${other.id}@1`], 'latest revision of each item, newest first');
  const all = await s.get('/api/knowledge?history=true', a.token);
  assert.deepEqual(ids(all.body.knowledge), [`${first.id}@3`, `${first.id}@2`, `${other.id}@1`, `${first.id}@1`]);
  const one = await s.get(`/api/knowledge?id=${first.id}&history=true`, a.token);
  assert.deepEqual(one.body.knowledge.map((k) => k.title), ['v3', 'v2', 'v1']);
  assert.deepEqual((await s.get(`/api/knowledge?id=${first.id}`, a.token)).body.knowledge, [third.body]);
  assert.deepEqual(ids((await s.get('/api/knowledge?q=v1', a.token)).body.knowledge), [], 'history=false matches only the latest revision');
  assert.deepEqual(ids((await s.get('/api/knowledge?q=V1&history=true', a.token)).body.knowledge), [`${first.id}@1`]);
});

test('only the original author may revise (403); stale is 409; unknown previousId is 404; refusals change nothing', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const item = (await s.post('/api/knowledge', base, a.token)).body;
  const byOther = await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: 1 }, b.token);
  assert.equal(byOther.status, 403);
  assert.match(byOther.body.error, /author/);
  assert.equal((await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: 1 }, a.token)).status, 201);
  for (const stale of [1, 3]) {
    const res = await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: stale }, a.token);
    assert.equal(res.status, 409, `expectedRevision ${stale}`);
    assert.match(res.body.error, /expectedRevision/);
  }
  const unknown = await s.post('/api/knowledge', { ...base, previousId: 'kn_nope', expectedRevision: 1 }, a.token);
  assert.equal(unknown.status, 404);
  assert.match(unknown.body.error, /previousId/);
  const history = await s.get(`/api/knowledge?id=${item.id}&history=true`, a.token);
  assert.deepEqual(ids(history.body.knowledge), [`${item.id}@2`, `${item.id}@1`]);
  assert.ok(history.body.knowledge.every((k) => k.authorId === a.id));
});

test('knowledge filters intersect: q over title and content, agentId, id, limit; bad parameters are 400', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const k1 = (await s.post('/api/knowledge', { ...base, title: 'About NEEDLES' }, a.token)).body;
  const k2 = (await s.post('/api/knowledge', { ...base, content: 'a needle in content' }, b.token)).body;
  const k3 = (await s.post('/api/knowledge', { ...base, title: 'other' }, a.token)).body;
  const get = async (qs) => (await s.get(`/api/knowledge?${qs}`, a.token)).body.knowledge.map((k) => k.id);
  assert.deepEqual(await get('q=needle'), [k2.id, k1.id]);
  assert.deepEqual(await get(`q=needle&agentId=${a.id}`), [k1.id]);
  assert.deepEqual(await get(`agentId=${a.id}`), [k3.id, k1.id]);
  assert.deepEqual(await get(`id=${k2.id}`), [k2.id]);
  assert.deepEqual(await get(`id=${k2.id}&agentId=${a.id}`), []);
  assert.deepEqual(await get('limit=2'), [k3.id, k2.id]);
  assert.deepEqual(await get('id=kn_unknown'), []);
  assert.deepEqual(await get('q=E%20IN%20c'), [k2.id], 'q is a substring, spaces included');
  assert.deepEqual(await get('q=needles%0Aa'), [], 'q does not match across title and content');
  for (const [qs, rule] of [
    ['limit=0', /limit/],
    ['limit=101', /limit/],
    ['history=yes', /history/],
    ['history=1', /history/],
    [`q=${'x'.repeat(201)}`, /"q"/],
    [`agentId=${'x'.repeat(201)}`, /agentId/],
    [`id=${'x'.repeat(201)}`, /"id"/],
    ['topicId=tp%201', /topicId/],
    [`topicId=${'t'.repeat(121)}`, /topicId/],
    ['topicId=', /topicId/],
    ['history=true&history=false', /more than once/],
  ]) {
    const res = await s.get(`/api/knowledge?${qs}`, a.token);
    assert.equal(res.status, 400, qs);
    assert.match(res.body.error, rule, qs);
  }
  assert.equal((await s.get('/api/knowledge')).status, 401);
});

test('search returns both collections and applies each filter only where the spec says', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const t1 = (await s.post('/api/topics', { title: 't1' }, a.token)).body;
  const t2 = (await s.post('/api/topics', { title: 't2' }, a.token)).body;
  // A few ms apart, so that `before` has a message strictly before m2 to keep.
  const pause = () => new Promise((r) => setTimeout(r, 5));
  const m1 = (await s.post('/api/messages', { topicId: t1.id, content: 'apple pie', clientId: 'm1' }, a.token)).body;
  await pause();
  const m2 = (await s.post('/api/messages', { topicId: t2.id, content: 'apple tart', clientId: 'm2' }, b.token)).body;
  await pause();
  const m3 = (await s.post('/api/messages', { topicId: t1.id, content: 'pear', clientId: 'm3' }, b.token)).body;
  assert.ok(m1.created < m2.created && m2.created < m3.created, 'distinct creation times');
  const k1 = (await s.post('/api/knowledge', { ...base, title: 'Apple facts', topicId: t2.id }, a.token)).body;
  const k2 = (await s.post('/api/knowledge', { ...base, content: 'pear notes' }, b.token)).body;
  const k1r2 = (await s.post('/api/knowledge', { ...base, title: 'Apple facts, corrected', previousId: k1.id, expectedRevision: 1 }, a.token)).body;

  const search = async (qs) => {
    const res = await s.get(`/api/search?${qs}`, a.token);
    assert.equal(res.status, 200, qs);
    // The spec's two lists, in its order; then our `topics` extension (issue 55, test/http/search-topics.test.mjs).
    assert.deepEqual(Object.keys(res.body), ['messages', 'knowledge', 'topics']);
    return { m: res.body.messages.map((x) => x.id), k: ids(res.body.knowledge) };
  };
  assert.deepEqual(await search(''), { m: [m3.id, m2.id, m1.id], k: [`${k1.id}@2`, `${k2.id}@1`] });
  assert.deepEqual(await search('q=APPLE'), { m: [m2.id, m1.id], k: [`${k1.id}@2`] }, 'q applies to both');
  assert.deepEqual(await search(`agentId=${b.id}`), { m: [m3.id, m2.id], k: [`${k2.id}@1`] }, 'agentId applies to both');
  assert.deepEqual(await search(`topicId=${t1.id}`), { m: [m3.id, m1.id], k: [`${k1.id}@2`, `${k2.id}@1`] }, 'topicId filters messages only');
  assert.deepEqual(await search(`before=${encodeURIComponent(m2.created)}`).then((r) => r.k), [`${k1.id}@2`, `${k2.id}@1`], 'before filters messages only');
  assert.deepEqual((await search(`before=${encodeURIComponent(m2.created)}`)).m, [m1.id], 'before keeps exactly the messages strictly before');
  assert.deepEqual(await search(`id=${k2.id}`), { m: [m3.id, m2.id, m1.id], k: [`${k2.id}@1`] }, 'id filters knowledge only');
  assert.deepEqual(await search('history=true'), { m: [m3.id, m2.id, m1.id], k: [`${k1r2.id}@2`, `${k2.id}@1`, `${k1.id}@1`] }, 'history applies to knowledge');
  assert.deepEqual(await search('limit=1'), { m: [m3.id], k: [`${k1.id}@2`] }, 'limit applies to each collection');
  assert.deepEqual(await search('q=pear&history=true&limit=100'), { m: [m3.id], k: [`${k2.id}@1`] });
  for (const [qs, rule] of [
    ['limit=0', /limit/],
    ['limit=abc', /limit/],
    ['before=yesterday', /before/],
    ['history=TRUE', /history/],
    [`q=${'x'.repeat(201)}`, /"q"/],
    [`topicId=${'x'.repeat(201)}`, /topicId/],
    ['messageId=m1', /unknown query parameter "messageId"/],
  ]) {
    const res = await s.get(`/api/search?${qs}`, a.token);
    assert.equal(res.status, 400, qs);
    assert.match(res.body.error, rule, qs);
  }
  assert.equal((await s.get('/api/search')).status, 401);
});

test('knowledge items and all their revisions survive a restart with identical responses', async (t) => {
  const s = await startServer(t);
  const a = await s.register('a');
  const b = await s.register('b');
  const item = (await s.post('/api/knowledge', { ...base, category: 'evidence', sources: ['https://e'] }, a.token)).body;
  await s.post('/api/knowledge', { ...base, title: 'v2', previousId: item.id, expectedRevision: 1 }, a.token);
  await s.post('/api/knowledge', { ...base, title: 'other' }, b.token);
  const before = await s.get('/api/knowledge?history=true', a.token);
  assert.equal(await s.stop(), 0);
  await s.start();
  const after = await s.get('/api/knowledge?history=true', a.token);
  assert.deepEqual(after.body, before.body);
  assert.equal(JSON.stringify(after.body), JSON.stringify(before.body), 'byte-identical across replay');
  assert.equal((await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: 1 }, a.token)).status, 409, 'revision state is replayed');
  assert.equal((await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: 2 }, b.token)).status, 403, 'authorship is replayed');
  const third = await s.post('/api/knowledge', { ...base, title: 'v3', previousId: item.id, expectedRevision: 2 }, a.token);
  assert.equal(third.status, 201);
  assert.equal(third.body.revision, 3);
});

test('write stop refuses POST /api/knowledge with 423 while reads keep working', async (t) => {
  const s = await startServer(t);
  const { token } = await s.register();
  const item = (await s.post('/api/knowledge', base, token)).body;
  assert.equal((await s.cli('writes', 'stop')).code, 0);
  const res = await s.post('/api/knowledge', base, token);
  assert.equal(res.status, 423);
  assert.equal(typeof res.body.error, 'string');
  assert.equal((await s.post('/api/knowledge', { ...base, previousId: item.id, expectedRevision: 1 }, token)).status, 423);
  assert.deepEqual((await s.get('/api/knowledge', token)).body.knowledge, [item]);
  assert.equal((await s.get('/api/search?q=content', token)).status, 200);
  assert.equal((await s.cli('writes', 'resume')).code, 0);
  assert.equal((await s.post('/api/knowledge', base, token)).status, 201);
});
