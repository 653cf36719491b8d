import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.mjs';
import { bodyValidator } from '../../dist/http/validate.js';

/** Asserts that `data` matches schema `name` from schemas/. */
const assertSchema = (name, data) => assert.doesNotThrow(() => bodyValidator(name)(structuredClone(data)), name);

const MINUTE_MS = 60_000;
const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WORK_ITEM_KEYS = [
  'id', 'sequence', 'authorId', 'title', 'description', 'acceptanceCriteria', 'tags', 'topicId', 'state',
  'assigneeId', 'leaseUntil', 'revision', 'created', 'updated', 'updatedBy', 'result', 'review',
];

let clientSeq = 0;
/** A fresh clientId for every new request. */
const cid = () => `c-${++clientSeq}`;

/** Starts a server with a movable clock and the named agents (and an operator when asked). */
async function board(t, names = ['creator', 'worker', 'other'], { operator = false } = {}) {
  const s = await startServer(t, { env: { FORUM_TEST_CLOCK: '1' } });
  const agents = {};
  for (const name of names) agents[name] = await s.register(name);
  if (operator) {
    const op = await s.cli('operator', 'create', '--name', 'Operator');
    assert.equal(op.code, 0, op.stderr);
    agents.operator = op.json;
  }
  return { s, ...agents };
}

function workBody(overrides = {}) {
  return { clientId: cid(), title: 'Compare retrieval papers', description: 'Read three papers.', acceptanceCriteria: 'One page.', ...overrides };
}

async function createWork(s, who, overrides = {}) {
  const res = await s.post('/api/work', workBody(overrides), who.token);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** Sends an action against `item` at its revision (or `extra.expectedRevision`) with a fresh clientId. */
function act(s, who, item, action, extra = {}) {
  return s.post('/api/work/action', { workItemId: item.id, expectedRevision: item.revision, clientId: cid(), action, ...extra }, who.token);
}

/** Like act, but asserts 200 and returns the new snapshot. */
async function ok(s, who, item, action, extra = {}) {
  const res = await act(s, who, item, action, extra);
  assert.equal(res.status, 200, `${action}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function advance(s, ms) {
  const r = await s.cli('clock', 'advance', '--ms', String(ms));
  assert.equal(r.code, 0, r.stderr);
}

test('creating work answers 201 with revision 1, open, and a discussion topic in commons made in the same record', async (t) => {
  const { s, creator } = await board(t, ['creator']);
  const first = await s.post('/api/work', workBody({ title: '  Trimmed title ', description: ' d ', acceptanceCriteria: ' a ' }), creator.token);
  assert.equal(first.status, 201);
  const w = first.body;
  assert.deepEqual(Object.keys(w), WORK_ITEM_KEYS);
  assert.equal(w.sequence, 1);
  assert.equal(w.revision, 1);
  assert.equal(w.state, 'open');
  assert.equal(w.authorId, creator.id);
  assert.equal(w.updatedBy, creator.id);
  assert.deepEqual([w.title, w.description, w.acceptanceCriteria], ['Trimmed title', 'd', 'a']);
  assert.deepEqual(w.tags, []);
  assert.deepEqual([w.assigneeId, w.leaseUntil, w.result, w.review], [null, null, null, null]);
  assert.match(w.created, ISO_Z);
  assert.equal(w.updated, w.created);

  const topics = (await s.get('/api/topics', creator.token)).body;
  assert.deepEqual(topics, [{ id: w.topicId, roomId: 'commons', authorId: creator.id, title: 'Trimmed title', created: w.created }]);

  const second = await createWork(s, creator, { tags: ['research', 'a-1'], topicId: w.topicId });
  assert.equal(second.sequence, 2);
  assert.equal(second.topicId, w.topicId, 'a given topicId is used');
  assert.deepEqual(second.tags, ['research', 'a-1']);
  assert.equal((await s.get('/api/topics', creator.token)).body.length, 1, 'no topic is created when topicId is given');
  const missing = await s.post('/api/work', workBody({ topicId: 'tp_nope' }), creator.token);
  assert.equal(missing.status, 404);
  assert.match(missing.body.error, /topic/);
});

test('work create input is validated field by field with 400 naming the field', async (t) => {
  const { s, creator } = await board(t, ['creator']);
  const cases = [
    [{ title: undefined }, /title/],
    [{ title: '   ' }, /title/],
    [{ title: 'x'.repeat(161) }, /title/],
    [{ description: 'x'.repeat(3001) }, /description/],
    [{ acceptanceCriteria: 'x'.repeat(2001) }, /acceptanceCriteria/],
    [{ acceptanceCriteria: undefined }, /acceptanceCriteria/],
    [{ tags: Array.from({ length: 9 }, (_, i) => `t${i}`) }, /tags/],
    [{ tags: ['Upper'] }, /tags/],
    [{ tags: ['-lead'] }, /tags/],
    [{ tags: ['x'.repeat(41)] }, /tags/],
    [{ tags: [''] }, /tags/],
    [{ clientId: 'bad id' }, /clientId/],
    [{ topicId: 'bad id' }, /topicId/],
    [{ extra: 1 }, /unknown field "extra"/],
  ];
  for (const [overrides, rule] of cases) {
    const res = await s.post('/api/work', workBody(overrides), creator.token);
    assert.equal(res.status, 400, JSON.stringify(overrides));
    assert.match(res.body.error, rule);
  }
  const maxed = await s.post('/api/work', workBody({
    title: 'x'.repeat(160), description: 'x'.repeat(3000), acceptanceCriteria: 'x'.repeat(2000),
    tags: Array.from({ length: 8 }, (_, i) => `${i}`.padEnd(40, 'z')),
  }), creator.token);
  assert.equal(maxed.status, 201, 'every field at its maximum fits');
  assert.equal((await s.get('/api/work', creator.token)).body.items.length, 1);
});

test('the full lifecycle claim, renew, submit, revise, claim, submit, accept makes one revision per action', async (t) => {
  const { s, creator, worker, other } = await board(t);
  let w = await createWork(s, creator, { tags: ['x'] });
  const start = Date.parse(w.created);

  w = await ok(s, worker, w, 'claim');
  assert.equal(w.revision, 2);
  assert.equal(w.state, 'claimed');
  assert.equal(w.assigneeId, worker.id);
  assert.equal(w.updatedBy, worker.id);
  assert.match(w.leaseUntil, ISO_Z);
  const lease1 = Date.parse(w.leaseUntil);
  assert.ok(Math.abs(lease1 - Date.parse(w.updated) - 30 * MINUTE_MS) < 5, 'default lease is 30 minutes');
  assert.ok(Date.parse(w.updated) >= start);

  w = await ok(s, worker, w, 'renew', { leaseMinutes: 10 });
  assert.equal(w.revision, 3);
  assert.equal(w.state, 'claimed');
  assert.equal(Date.parse(w.leaseUntil), lease1 + 10 * MINUTE_MS, 'renew extends the lease end by leaseMinutes');

  w = await ok(s, worker, w, 'submit', { content: '  first result  ', sources: ['HTTPS://example.org/a', 'http://b.example'] });
  assert.equal(w.revision, 4);
  assert.equal(w.state, 'submitted');
  assert.equal(w.assigneeId, worker.id);
  assert.equal(w.leaseUntil, null);
  assert.deepEqual(Object.keys(w.result), ['authorId', 'content', 'sources', 'created']);
  assert.deepEqual([w.result.authorId, w.result.content, w.result.sources], [worker.id, 'first result', ['HTTPS://example.org/a', 'http://b.example']]);
  assert.match(w.result.created, ISO_Z);

  w = await ok(s, creator, w, 'review', { decision: 'revise', feedback: ' cite the third paper ' });
  assert.equal(w.revision, 5);
  assert.equal(w.state, 'open', 'revise returns work to the open pool');
  assert.deepEqual([w.assigneeId, w.leaseUntil, w.result], [null, null, null]);
  assert.deepEqual(Object.keys(w.review), ['authorId', 'decision', 'feedback', 'created']);
  assert.deepEqual([w.review.authorId, w.review.decision, w.review.feedback], [creator.id, 'revise', 'cite the third paper']);

  w = await ok(s, other, w, 'claim', { leaseMinutes: 5 });
  assert.equal(w.assigneeId, other.id);
  assert.equal(Date.parse(w.leaseUntil) - Date.parse(w.updated), 5 * MINUTE_MS);
  assert.equal(w.review.decision, 'revise', 'the review stays visible to the next claimant');
  w = await ok(s, other, w, 'submit', { content: 'second result' });
  assert.deepEqual(w.result.sources, [], 'sources default to empty');
  assert.equal(w.review, null, 'a new submit clears the previous review');
  w = await ok(s, creator, w, 'review', { decision: 'accept', feedback: 'good' });
  assert.equal(w.revision, 8);
  assert.equal(w.state, 'completed');
  assert.equal(w.assigneeId, other.id);
  assert.equal(w.result.content, 'second result');
  assert.equal(w.review.decision, 'accept');
  assert.equal(w.updatedBy, creator.id);
  for (const ts of [w.created, w.updated, w.result.created, w.review.created]) assert.match(ts, ISO_Z);

  assertSchema('WorkItem', w);
  const list = (await s.get(`/api/work?id=${w.id}`, worker.token)).body;
  assertSchema('WorkList', list);
  assert.deepEqual(list.items, [w]);
});

test('release returns claimed work to the open pool and the assignee may release after the lease expired', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim');
  w = await ok(s, worker, w, 'release');
  assert.deepEqual([w.state, w.assigneeId, w.leaseUntil, w.revision], ['open', null, null, 3]);
  w = await ok(s, worker, w, 'claim', { leaseMinutes: 5 });
  await advance(s, 6 * MINUTE_MS);
  w = await ok(s, worker, w, 'release');
  assert.equal(w.state, 'open');
});

test('wrong roles are refused with 403', async (t) => {
  const { s, creator, worker, other, operator } = await board(t, undefined, { operator: true });
  let w = await createWork(s, creator);

  const own = await act(s, creator, w, 'claim');
  assert.equal(own.status, 403);
  assert.match(own.body.error, /creator cannot claim their own work/);
  const reviewOpen = await act(s, other, w, 'review', { decision: 'accept', feedback: 'x' });
  assert.equal(reviewOpen.status, 403, 'a stranger may not review');
  assert.equal((await act(s, other, w, 'cancel')).status, 403, 'a stranger may not cancel');

  w = await ok(s, worker, w, 'claim');
  for (const [action, extra] of [['renew', {}], ['release', {}], ['submit', { content: 'x' }]]) {
    const res = await act(s, other, w, action, extra);
    assert.equal(res.status, 403, action);
    assert.match(res.body.error, /assignee/);
    assert.equal((await act(s, creator, w, action, extra)).status, 403, `the creator is not the assignee (${action})`);
  }
  w = await ok(s, worker, w, 'submit', { content: 'done' });
  for (const who of [worker, other]) {
    const res = await act(s, who, w, 'review', { decision: 'accept', feedback: 'x' });
    assert.equal(res.status, 403);
    assert.match(res.body.error, /creator.*operator/);
  }
  assert.equal((await act(s, worker, w, 'cancel')).status, 403, 'the assignee may not cancel');

  // The operator may review others' work, but never its own result.
  const w2 = await createWork(s, creator);
  let mine = await ok(s, operator, w2, 'claim');
  mine = await ok(s, operator, mine, 'submit', { content: 'by the operator' });
  const self = await act(s, operator, mine, 'review', { decision: 'accept', feedback: 'x' });
  assert.equal(self.status, 403);
  assert.match(self.body.error, /cannot review its own result/);
  mine = await ok(s, creator, mine, 'review', { decision: 'accept', feedback: 'fine' });
  assert.equal(mine.state, 'completed');

  const byOperator = await ok(s, operator, w, 'review', { decision: 'revise', feedback: 'operator says redo' });
  assert.equal(byOperator.review.authorId, operator.id);
  const w3 = await createWork(s, creator);
  assert.equal((await ok(s, operator, w3, 'cancel')).state, 'cancelled', 'the operator may cancel anyone\'s work');
});

test('wrong states, stale revisions and unknown items are refused with 409 and 404', async (t) => {
  const { s, creator, worker, other } = await board(t);
  let w = await createWork(s, creator);

  for (const [action, extra] of [['renew', {}], ['release', {}], ['submit', { content: 'x' }]]) {
    const res = await act(s, worker, w, action, extra);
    assert.equal(res.status, 409, `${action} of open work`);
  }
  assert.equal((await act(s, creator, w, 'review', { decision: 'accept', feedback: 'x' })).status, 409, 'review of open work');

  const stale = await act(s, worker, w, 'claim', { expectedRevision: 2 });
  assert.equal(stale.status, 409);
  assert.match(stale.body.error, /expectedRevision/);

  w = await ok(s, worker, w, 'claim');
  const taken = await act(s, other, w, 'claim');
  assert.equal(taken.status, 409, 'claim of an unexpired claim');
  assert.match(taken.body.error, /claimed/);
  assert.equal((await act(s, worker, w, 'claim')).status, 409, 'the assignee cannot re-claim an unexpired claim');
  assert.equal((await act(s, creator, w, 'review', { decision: 'accept', feedback: 'x' })).status, 409, 'review of claimed work');

  w = await ok(s, worker, w, 'submit', { content: 'r' });
  assert.equal((await act(s, other, w, 'claim')).status, 409, 'claim of submitted work');
  assert.equal((await act(s, worker, w, 'submit', { content: 'again' })).status, 409, 'submit twice');
  w = await ok(s, creator, w, 'review', { decision: 'accept', feedback: 'ok' });

  const closedAttempts = [
    [other, 'claim', {}], [worker, 'renew', {}], [worker, 'release', {}], [worker, 'submit', { content: 'x' }],
    [creator, 'review', { decision: 'revise', feedback: 'x' }], [creator, 'cancel', {}],
  ];
  for (const [who, action, extra] of closedAttempts) {
    const res = await act(s, who, w, action, extra);
    assert.equal(res.status, 409, `${action} of completed work`);
    assert.match(res.body.error, /closed work is immutable/);
  }
  let c = await createWork(s, creator);
  c = await ok(s, creator, c, 'cancel');
  for (const [who, action, extra] of closedAttempts) {
    const res = await act(s, who, c, action, extra);
    assert.equal(res.status, 409, `${action} of cancelled work`);
    assert.match(res.body.error, /closed work is immutable/);
  }

  const unknown = await act(s, worker, { id: 'wk_missing', revision: 1 }, 'claim');
  assert.equal(unknown.status, 404);
  const listed = (await s.get(`/api/work?id=${w.id}`, creator.token)).body.items[0];
  assert.equal(listed.revision, w.revision, 'no refused action wrote a revision');
});

test('cancel is accepted from open, claimed and submitted work', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  const open = await createWork(s, creator);
  let claimed = await createWork(s, creator);
  claimed = await ok(s, worker, claimed, 'claim');
  let submitted = await createWork(s, creator);
  submitted = await ok(s, worker, submitted, 'claim');
  submitted = await ok(s, worker, submitted, 'submit', { content: 'r' });
  for (const w of [open, claimed, submitted]) {
    const c = await ok(s, creator, w, 'cancel');
    assert.equal(c.state, 'cancelled');
    assert.deepEqual([c.assigneeId, c.leaseUntil], [null, null]);
    assert.equal(c.revision, w.revision + 1);
  }
});

test('action bodies are validated per variant with 400', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  const w = await createWork(s, creator);
  const cases = [
    [{ action: 'fly' }, /action/],
    [{ action: undefined }, /action/],
    [{ action: 'claim', leaseMinutes: 4 }, /leaseMinutes/],
    [{ action: 'claim', leaseMinutes: 121 }, /leaseMinutes/],
    [{ action: 'renew', leaseMinutes: 7.5 }, /leaseMinutes/],
    [{ action: 'release', leaseMinutes: 30 }, /unknown field "leaseMinutes"/],
    [{ action: 'cancel', content: 'x' }, /unknown field "content"/],
    [{ action: 'submit' }, /content/],
    [{ action: 'submit', content: '   ' }, /content/],
    [{ action: 'submit', content: 'x'.repeat(6001) }, /content/],
    [{ action: 'submit', content: 'x', sources: ['ftp://x'] }, /sources/],
    [{ action: 'submit', content: 'x', sources: ['https://x/' + 'a'.repeat(1000)] }, /sources/],
    [{ action: 'submit', content: 'x', sources: Array(6).fill('https://x') }, /sources/],
    [{ action: 'review', decision: 'maybe', feedback: 'x' }, /decision/],
    [{ action: 'review', decision: 'accept' }, /feedback/],
    [{ action: 'review', decision: 'accept', feedback: 'x'.repeat(2001) }, /feedback/],
    [{ action: 'claim', expectedRevision: 0 }, /expectedRevision/],
    [{ action: 'claim', expectedRevision: '1' }, /expectedRevision/],
    [{ action: 'claim', clientId: 'no spaces' }, /clientId/],
    [{ action: 'claim', workItemId: undefined }, /workItemId/],
  ];
  for (const [body, rule] of cases) {
    const res = await s.post('/api/work/action', { workItemId: w.id, expectedRevision: 1, clientId: cid(), ...body }, worker.token);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(res.body.error, rule, JSON.stringify(body));
  }
  const okSources = await act(s, worker, await ok(s, worker, w, 'claim'), 'submit', {
    content: 'x', sources: Array(5).fill('Http://x/' + 'a'.repeat(991)),
  });
  assert.equal(okSources.status, 200, 'five 1000-character sources with any letter case fit');
});

test('a lease expires by the clock: renew is refused, others can claim it and available lists it', async (t) => {
  const { s, creator, worker, other } = await board(t);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim', { leaseMinutes: 30 });
  const avail = async () => (await s.get('/api/work?available=true', creator.token)).body.items.map((i) => i.id);
  assert.deepEqual(await avail(), []);
  await advance(s, 29 * MINUTE_MS);
  assert.equal((await act(s, other, w, 'claim')).status, 409, 'still held one minute before expiry');
  await advance(s, 2 * MINUTE_MS);
  assert.deepEqual(await avail(), [w.id], 'an expired claim is available');
  assert.equal((await s.get(`/api/work?state=claimed`, creator.token)).body.items.length, 1, 'the stored state stays claimed');
  const renew = await act(s, worker, w, 'renew');
  assert.equal(renew.status, 409);
  assert.match(renew.body.error, /expired/);
  const taken = await ok(s, other, w, 'claim');
  assert.equal(taken.assigneeId, other.id);
  assert.equal((await act(s, worker, taken, 'submit', { content: 'late' })).status, 403, 'the former assignee lost the work');
  assert.deepEqual(await avail(), []);
});

test('the former assignee can reclaim its own expired claim and submit after expiry while nobody else claimed', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim', { leaseMinutes: 5 });
  await advance(s, 5 * MINUTE_MS);
  const late = await ok(s, worker, w, 'submit', { content: 'late but still assigned' });
  assert.equal(late.state, 'submitted');
  let w2 = await createWork(s, creator);
  w2 = await ok(s, worker, w2, 'claim', { leaseMinutes: 5 });
  await advance(s, 6 * MINUTE_MS);
  const again = await ok(s, worker, w2, 'claim', { leaseMinutes: 5 });
  assert.ok(Date.parse(again.leaseUntil) > Date.parse(w2.leaseUntil));
});

test('renew extends the current lease end by leaseMinutes, also past 120 minutes from now', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim', { leaseMinutes: 100 });
  const claimedUntil = Date.parse(w.leaseUntil);
  await advance(s, 10 * MINUTE_MS);
  w = await ok(s, worker, w, 'renew', { leaseMinutes: 60 });
  assert.equal(Date.parse(w.leaseUntil), claimedUntil + 60 * MINUTE_MS, 'the old end plus 60 minutes');
  // The server's clock is the test clock plus real time, so "about 150 minutes" from the renewal.
  assert.ok(Date.parse(w.leaseUntil) - Date.parse(w.updated) > 149 * MINUTE_MS, 'more than 120 minutes from the renewal');
  w = await ok(s, worker, w, 'renew', {});
  assert.equal(Date.parse(w.leaseUntil), claimedUntil + 90 * MINUTE_MS, 'leaseMinutes defaults to 30');
});

test('of 50 agents racing to claim the same open item exactly one wins, the other 49 get 409 and history holds one claim revision', async (t) => {
  const names = Array.from({ length: 50 }, (_, i) => `claimant${i}`);
  const { s, creator, ...agents } = await board(t, ['creator', ...names]);
  const w = await createWork(s, creator);
  const results = await Promise.all(names.map((n) => act(s, agents[n], w, 'claim')));
  const statuses = results.map((r) => r.status).sort();
  assert.deepEqual(statuses, [200, ...Array(49).fill(409)]);
  const winner = results.find((r) => r.status === 200).body;
  assert.equal(winner.revision, 2);
  assert.ok(names.some((n) => agents[n].id === winner.assigneeId), 'the winner is one of the racers');
  for (const r of results.filter((x) => x.status === 409)) assert.equal(typeof r.body.error, 'string');
  const history = (await s.get(`/api/work/history?workItemId=${w.id}`, creator.token)).body;
  assert.deepEqual(history.revisions.map((r) => r.state), ['open', 'claimed'], 'exactly one claim revision');
  assert.deepEqual(history.revisions[1], winner);
  const current = (await s.get(`/api/work?id=${w.id}`, creator.token)).body.items[0];
  assert.deepEqual(current, winner);
});

test('an identical retry returns the original snapshot even after later updates; a changed body with a used clientId is 409', async (t) => {
  const { s, creator, worker, other } = await board(t);
  const createBody = workBody({ tags: ['t'] });
  const created = (await s.post('/api/work', createBody, creator.token)).body;
  const claimBody = { workItemId: created.id, expectedRevision: 1, clientId: 'claim-1', action: 'claim' };
  const claimed = await s.post('/api/work/action', claimBody, worker.token);
  assert.equal(claimed.status, 200);
  const submitted = await ok(s, worker, claimed.body, 'submit', { content: 'r' });

  const createRetry = await s.post('/api/work', { ...createBody, title: `  ${createBody.title} ` }, creator.token);
  assert.equal(createRetry.status, 200, 'an identical work retry is 200 (part 7), also for a create');
  assert.deepEqual(createRetry.body, created, 'create retry returns revision 1 although the item moved on');
  const createReceipt = await s.get(`/api/receipts?kind=work&clientId=${createBody.clientId}`, creator.token);
  assert.equal(createReceipt.body.response.status, 201, 'the receipt keeps the response committed then');
  const claimRetry = await s.post('/api/work/action', { ...claimBody, leaseMinutes: 30 }, worker.token);
  assert.equal(claimRetry.status, 200, 'the default leaseMinutes is part of the normalized request');
  assert.deepEqual(claimRetry.body, claimed.body);
  assert.equal(claimRetry.body.revision, 2);
  assert.equal(submitted.revision, 3);

  const changedCreate = await s.post('/api/work', { ...createBody, title: 'other' }, creator.token);
  assert.equal(changedCreate.status, 409);
  assert.match(changedCreate.body.error, /clientId/);
  assert.equal((await s.post('/api/work/action', { ...claimBody, leaseMinutes: 40 }, worker.token)).status, 409);
  const actionWithCreateId = await s.post('/api/work/action', { ...claimBody, clientId: createBody.clientId }, creator.token);
  assert.equal(actionWithCreateId.status, 409, 'clientIds are shared between creates and actions');
  const createWithActionId = await s.post('/api/work', workBody({ clientId: 'claim-1' }), worker.token);
  assert.equal(createWithActionId.status, 409);
  const otherAuthor = await s.post('/api/work', { ...createBody }, other.token);
  assert.equal(otherAuthor.status, 201, 'clientIds are per author');
  assert.notEqual(otherAuthor.body.id, created.id);
});

test('history pages ascending through a revise cycle and a cancel and keeps earlier results', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim');
  w = await ok(s, worker, w, 'submit', { content: 'first try' });
  w = await ok(s, creator, w, 'review', { decision: 'revise', feedback: 'more' });
  w = await ok(s, worker, w, 'claim');
  w = await ok(s, worker, w, 'submit', { content: 'second try' });
  w = await ok(s, creator, w, 'cancel');
  assert.equal(w.revision, 7);

  const pages = [];
  let after = 0;
  for (;;) {
    const res = await s.get(`/api/work/history?workItemId=${w.id}&afterRevision=${after}&limit=3`, worker.token);
    assert.equal(res.status, 200);
    assert.equal(res.body.untrusted, true);
    pages.push(res.body);
    after = res.body.nextAfterRevision;
    if (!res.body.hasMore) break;
  }
  assert.deepEqual(pages.map((p) => p.revisions.map((r) => r.revision)), [[1, 2, 3], [4, 5, 6], [7]]);
  assert.deepEqual(pages.map((p) => p.nextAfterRevision), [3, 6, 7]);
  for (const p of pages) assertSchema('WorkHistory', p);
  const all = pages.flatMap((p) => p.revisions);
  assert.deepEqual(all.map((r) => r.state), ['open', 'claimed', 'submitted', 'open', 'claimed', 'submitted', 'cancelled']);
  assert.equal(all[2].result.content, 'first try', 'the revised result is preserved in history');
  assert.equal(all[3].review.decision, 'revise');
  assert.equal(all[6].result.content, 'second try', 'cancel keeps the submitted result');

  const empty = (await s.get(`/api/work/history?workItemId=${w.id}&afterRevision=7`, worker.token)).body;
  assert.deepEqual(empty, { untrusted: true, revisions: [], nextAfterRevision: 7, hasMore: false });
  const beyond = (await s.get(`/api/work/history?workItemId=${w.id}&afterRevision=50`, worker.token)).body;
  assert.deepEqual(beyond, { untrusted: true, revisions: [], nextAfterRevision: 50, hasMore: false });
  assert.equal((await s.get('/api/work/history?workItemId=wk_nope', worker.token)).status, 404);
  for (const qs of ['', 'workItemId=bad!', `workItemId=${w.id}&limit=0`, `workItemId=${w.id}&afterRevision=-1`, `workItemId=${w.id}&x=1`]) {
    assert.equal((await s.get(`/api/work/history?${qs}`, worker.token)).status, 400, qs);
  }
  assert.equal((await s.get(`/api/work/history?workItemId=${w.id}`)).status, 401);
});

test('the work list pages in creation sequence and every filter narrows it', async (t) => {
  const { s, creator, worker, other } = await board(t);
  const a = await createWork(s, creator, { title: 'Alpha task', tags: ['red'] });
  const b = await createWork(s, other, { title: 'Beta', description: 'Contains a NEEDLE here', tags: ['red', 'blue'] });
  let c = await createWork(s, creator, { title: 'Gamma', acceptanceCriteria: 'needle in criteria' });
  let d = await createWork(s, creator, { title: 'Delta' });
  let e = await createWork(s, other, { title: 'Epsilon' });
  c = await ok(s, worker, c, 'claim', { leaseMinutes: 5 });
  d = await ok(s, worker, d, 'claim', { leaseMinutes: 60 });
  e = await ok(s, creator, e, 'claim');
  e = await ok(s, creator, e, 'submit', { content: 'r' });

  const ids = async (qs) => {
    const res = await s.get(`/api/work?${qs}`, worker.token);
    assert.equal(res.status, 200, qs);
    assert.equal(res.body.untrusted, true);
    return res.body.items.map((i) => i.id);
  };
  const p1 = (await s.get('/api/work?limit=2', worker.token)).body;
  assert.deepEqual([p1.items.map((i) => i.sequence), p1.nextAfter, p1.hasMore], [[1, 2], 2, true]);
  const p2 = (await s.get('/api/work?limit=2&after=2', worker.token)).body;
  assert.deepEqual([p2.items.map((i) => i.sequence), p2.nextAfter, p2.hasMore], [[3, 4], 4, true]);
  const p3 = (await s.get('/api/work?limit=2&after=4', worker.token)).body;
  assert.deepEqual([p3.items.map((i) => i.sequence), p3.nextAfter, p3.hasMore], [[5], 5, false]);
  const p4 = (await s.get('/api/work?after=5', worker.token)).body;
  assert.deepEqual(p4, { untrusted: true, items: [], nextAfter: 5, hasMore: false });
  assert.deepEqual(p3.items[0], e, 'listed items are the current revision');

  assert.deepEqual(await ids(''), [a.id, b.id, c.id, d.id, e.id]);
  assert.deepEqual(await ids(`id=${b.id}`), [b.id]);
  assert.deepEqual(await ids(`id=${b.id}&after=2`), []);
  assert.deepEqual(await ids('id=wk_nope'), []);
  assert.deepEqual(await ids('state=claimed'), [c.id, d.id]);
  assert.deepEqual(await ids('state=submitted'), [e.id]);
  assert.deepEqual(await ids('tag=red'), [a.id, b.id]);
  assert.deepEqual(await ids('tag=blue'), [b.id]);
  assert.deepEqual(await ids('q=needle'), [b.id, c.id], 'q matches description and acceptanceCriteria, any case');
  assert.deepEqual(await ids('q=ALPHA'), [a.id]);
  assert.deepEqual(await ids(`authorId=${other.id}`), [b.id, e.id]);
  assert.deepEqual(await ids(`assigneeId=${worker.id}`), [c.id, d.id]);
  assert.deepEqual(await ids(`assigneeId=${creator.id}&state=submitted`), [e.id]);
  assert.deepEqual(await ids('available=true'), [a.id, b.id]);
  assert.deepEqual(await ids('available=false'), [c.id, d.id, e.id]);
  const filteredPage = (await s.get('/api/work?state=claimed&limit=1', worker.token)).body;
  assert.deepEqual([filteredPage.items.map((i) => i.id), filteredPage.nextAfter, filteredPage.hasMore], [[c.id], 3, true]);
  const lastFiltered = (await s.get('/api/work?state=claimed&limit=1&after=3', worker.token)).body;
  assert.deepEqual([lastFiltered.items.map((i) => i.id), lastFiltered.nextAfter, lastFiltered.hasMore], [[d.id], 4, false]);

  await advance(s, 6 * MINUTE_MS);
  assert.deepEqual(await ids('available=true'), [a.id, b.id, c.id], 'expired claims become available');
  assert.deepEqual(await ids('available=false'), [d.id, e.id]);

  assert.equal((await s.cli('writes', 'stop')).code, 0);
  assert.deepEqual(await ids('available=true'), [], 'nothing is available while writes are stopped');
  assert.deepEqual(await ids('available=false'), [a.id, b.id, c.id, d.id, e.id]);
  const blocked = await s.post('/api/work', workBody(), creator.token);
  assert.equal(blocked.status, 423);
  assert.equal((await act(s, worker, a, 'claim')).status, 423);
  assert.equal((await s.cli('writes', 'resume')).code, 0);

  for (const qs of ['limit=0', 'limit=101', 'after=-1', 'after=01', 'state=done', 'tag=Red', `tag=${'x'.repeat(41)}`,
    `q=${'x'.repeat(201)}`, 'available=yes', 'id=bad!', 'authorId=bad!', 'nope=1']) {
    const res = await s.get(`/api/work?${qs}`, worker.token);
    assert.equal(res.status, 400, qs);
  }
  assert.equal((await s.get('/api/work')).status, 401);
});

test('a snapshot over 22000 UTF-8 bytes is refused with 400 and nothing is written', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  // Each field is within its character limit, but \u0001 serializes to 6 bytes and € to 3.
  const tooBig = workBody({ description: '\u0001'.repeat(3000), acceptanceCriteria: '€'.repeat(2000) });
  const refused = await s.post('/api/work', tooBig, creator.token);
  assert.equal(refused.status, 400);
  assert.match(refused.body.error, /22000/);
  assert.equal((await s.get('/api/work', creator.token)).body.items.length, 0);
  assert.equal((await s.get('/api/topics', creator.token)).body.length, 0, 'no topic was created either');
  const sameIdSmaller = await s.post('/api/work', { ...tooBig, description: 'short' }, creator.token);
  assert.equal(sameIdSmaller.status, 201, 'the refused request recorded no receipt for its clientId');

  let w = await createWork(s, creator, { description: '€'.repeat(1500) });
  w = await ok(s, worker, w, 'claim');
  const bigSubmit = await act(s, worker, w, 'submit', { content: '€'.repeat(6000) });
  assert.equal(bigSubmit.status, 400);
  assert.match(bigSubmit.body.error, /22000/);
  w = await ok(s, worker, w, 'submit', { content: '€'.repeat(5000) });
  assert.ok(Buffer.byteLength(JSON.stringify(w)) <= 22000);
  const bigReview = await act(s, creator, w, 'review', { decision: 'accept', feedback: '€'.repeat(2000) });
  assert.equal(bigReview.status, 400, 'an accept keeps the result, and result and review together exceed the limit');
  const current = (await s.get(`/api/work?id=${w.id}`, creator.token)).body.items[0];
  assert.equal(current.revision, w.revision);
  assert.equal((await ok(s, creator, w, 'review', { decision: 'accept', feedback: 'fine' })).state, 'completed');
});

test('a snapshot of exactly 22000 UTF-8 bytes is accepted and one byte more is refused', async (t) => {
  const { s, creator } = await board(t, ['creator']);
  // Ids and timestamps are fixed width, so a probe item's size tells every other item's size:
  // the snapshot is the probe's JSON with description and acceptanceCriteria (1 byte each) replaced.
  const probe = await createWork(s, creator, { description: 'x', acceptanceCriteria: 'x' });
  const fill = 22000 - (Buffer.byteLength(JSON.stringify(probe)) - 2);
  const description = '\u0001'.repeat(3000); // 6 bytes each in JSON: 18000
  const rest = fill - 18000;
  const acceptanceCriteria = '\u0001'.repeat(Math.floor(rest / 6)) + 'a'.repeat(rest % 6);
  assert.ok(acceptanceCriteria.length <= 2000, 'both fields stay within their character limits');

  const atLimit = await s.post('/api/work', workBody({ description, acceptanceCriteria }), creator.token);
  assert.equal(atLimit.status, 201, JSON.stringify(atLimit.body).slice(0, 200));
  assert.equal(Buffer.byteLength(JSON.stringify(atLimit.body)), 22000);
  const overLimit = await s.post('/api/work', workBody({ description, acceptanceCriteria: `${acceptanceCriteria}a` }), creator.token);
  assert.equal(overLimit.status, 400);
  assert.match(overLimit.body.error, /22001 bytes/);
});

test('a disabled agent gets 401 and its claim simply expires with its lease', async (t) => {
  const { s, creator, worker, other } = await board(t);
  let w = await createWork(s, creator);
  w = await ok(s, worker, w, 'claim', { leaseMinutes: 10 });
  assert.equal((await s.cli('agents', 'disable', worker.id)).code, 0);
  assert.equal((await act(s, worker, w, 'renew')).status, 401);
  const still = (await s.get(`/api/work?id=${w.id}`, creator.token)).body.items[0];
  assert.deepEqual([still.state, still.assigneeId, still.revision], ['claimed', worker.id, w.revision], 'disabling writes no work revision');
  assert.equal((await act(s, other, w, 'claim')).status, 409);
  await advance(s, 10 * MINUTE_MS);
  assert.equal((await ok(s, other, w, 'claim')).assigneeId, other.id);
});

test('work items, history, receipts and the work board survive a restart', async (t) => {
  const { s, creator, worker } = await board(t, ['creator', 'worker']);
  const createBody = workBody({ tags: ['keep'] });
  const created = (await s.post('/api/work', createBody, creator.token)).body;
  const claimBody = { workItemId: created.id, expectedRevision: 1, clientId: 'persist-claim', action: 'claim', leaseMinutes: 45 };
  const claimed = (await s.post('/api/work/action', claimBody, worker.token)).body;
  let w = await ok(s, worker, claimed, 'submit', { content: 'persisted result', sources: ['https://example.org'] });
  w = await ok(s, creator, w, 'review', { decision: 'revise', feedback: 'again' });
  const second = await createWork(s, worker, { title: 'Second' });
  const listBefore = (await s.get('/api/work', creator.token)).body;
  const historyBefore = (await s.get(`/api/work/history?workItemId=${w.id}`, creator.token)).body;
  const topicsBefore = (await s.get('/api/topics', creator.token)).body;

  assert.equal(await s.stop(), 0);
  await s.start();
  assert.deepEqual((await s.get('/api/work', creator.token)).body, listBefore);
  assert.deepEqual((await s.get(`/api/work/history?workItemId=${w.id}`, creator.token)).body, historyBefore);
  assert.deepEqual((await s.get('/api/topics', creator.token)).body, topicsBefore);
  const createRetry = await s.post('/api/work', createBody, creator.token);
  assert.deepEqual([createRetry.status, createRetry.body], [200, created]);
  const claimRetry = await s.post('/api/work/action', claimBody, worker.token);
  assert.deepEqual([claimRetry.status, claimRetry.body], [200, claimed]);
  assert.equal((await s.post('/api/work/action', { ...claimBody, leaseMinutes: 50 }, worker.token)).status, 409);
  const third = await createWork(s, creator, { title: 'Third' });
  assert.equal(third.sequence, second.sequence + 1, 'the creation sequence continues');
  w = await ok(s, worker, w, 'claim');
  assert.equal(w.revision, 5, 'create, claim, submit, review before the restart; claim after it');
});
