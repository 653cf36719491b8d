import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir, logText } from '../helpers/server.mjs';
import { bodyValidator } from '../../dist/http/validate.js';

/** Asserts that `data` matches schema `name` from schemas/ (throws a 400-style error naming the field otherwise). */
const assertSchema = (name, data) => assert.doesNotThrow(() => bodyValidator(name)(structuredClone(data)), name);

const PUBLIC_URL = 'https://forum.example.org';
const CATALOG_KEYS = ['format', 'untrusted', 'checkedAt', 'pollAfterSeconds', 'curation', 'writeStop', 'registrationOpen', 'items', 'onboardingUrl', 'openapiUrl', 'nextSteps'];
const ENTRY_KEYS = ['workItemId', 'title', 'summary', 'requiredCapabilities', 'acceptanceCriteria', 'deliverable', 'state', 'available', 'workUrl', 'discussionUrl', 'briefUrl'];
const MINUTE_MS = 60_000;

function brief(workItemId, n = 1) {
  return {
    workItemId,
    title: `Starter task ${n}`,
    summary: 'A small, well-defined first contribution.',
    requiredCapabilities: ['reading', 'writing'],
    acceptanceCriteria: ['one page', 'cites sources'],
    deliverable: 'A submitted result.',
  };
}

/** Writes `briefs` to a JSON file in a temp folder and runs `opportunities set --file`. */
async function setBriefs(t, s, briefs, raw) {
  const file = join(tempDir(t, 'briefs-'), 'briefs.json');
  writeFileSync(file, raw ?? JSON.stringify(briefs));
  return s.cli('opportunities', 'set', '--file', file);
}

async function setup(t) {
  const s = await startServer(t, { env: { FORUM_TEST_CLOCK: '1', FORUM_PUBLIC_URL: PUBLIC_URL } });
  const creator = await s.register('creator');
  const worker = await s.register('worker');
  const create = async (title) => {
    const res = await s.post('/api/work', { clientId: `c-${title}`, title, description: 'd', acceptanceCriteria: 'a' }, creator.token);
    assert.equal(res.status, 201);
    return res.body;
  };
  return { s, creator, worker, create };
}

test('the catalog is public, has exactly the documented fields and is cacheable for 300 seconds', async (t) => {
  const { s } = await setup(t);
  const res = await s.get('/api/opportunities');
  assert.equal(res.status, 200);
  assert.equal(res.headers['cache-control'], 'public, max-age=300');
  const c = res.body;
  assert.deepEqual(Object.keys(c).sort(), [...CATALOG_KEYS].sort());
  assertSchema('Opportunities', c);
  assert.equal(c.format, 'forum-opportunities-v1');
  assert.equal(c.untrusted, true);
  assert.equal(c.pollAfterSeconds, 300);
  assert.match(c.curation, /curated by the operator/);
  assert.deepEqual([c.writeStop, c.registrationOpen, c.items], [false, true, []]);
  assert.match(c.checkedAt, /Z$/);
  assert.equal(c.onboardingUrl, `${PUBLIC_URL}/api/start.md`);
  assert.equal(c.openapiUrl, `${PUBLIC_URL}/openapi.json`);
  assert.ok(c.nextSteps.length > 0 && c.nextSteps.every((x) => typeof x === 'string'));
  assert.equal((await s.get('/api/opportunities?x=1')).status, 200, 'no parameters are read');
  assert.equal((await s.cli('registration', 'close')).code, 0);
  assert.equal((await s.get('/api/opportunities')).body.registrationOpen, false);
});

test('opportunities set publishes briefs with live state and links; unknown work items are omitted', async (t) => {
  const { s, create } = await setup(t);
  const w1 = await create('one');
  const w2 = await create('two');
  const set = await setBriefs(t, s, [brief(w2.id, 2), brief('wk_not_yet', 9), brief(w1.id, 1)]);
  assert.equal(set.code, 0, set.stderr);
  const c = (await s.get('/api/opportunities')).body;
  assert.deepEqual(c.items.map((i) => i.workItemId), [w2.id, w1.id], 'operator order, missing work omitted');
  const e = c.items[0];
  assert.deepEqual(Object.keys(e).sort(), [...ENTRY_KEYS].sort());
  assert.deepEqual(
    { ...e, state: undefined, available: undefined, workUrl: undefined, discussionUrl: undefined, briefUrl: undefined },
    { ...brief(w2.id, 2), state: undefined, available: undefined, workUrl: undefined, discussionUrl: undefined, briefUrl: undefined },
  );
  assert.equal(e.state, 'open');
  assert.equal(e.available, true);
  assert.equal(e.workUrl, `${PUBLIC_URL}/api/work?id=${w2.id}`);
  assert.equal(e.discussionUrl, `${PUBLIC_URL}/api/messages?topicId=${w2.topicId}`);
  assert.equal(e.briefUrl, `${PUBLIC_URL}/api/opportunities/brief?workItemId=${w2.id}`);
  // Each link answers with something useful: the work item and its discussion for a token, a
  // 401 that says how to get one without, and the brief for anyone.
  const path = (url) => url.slice(PUBLIC_URL.length);
  const reader = await s.register('reader');
  const said = (await s.post('/api/messages', { topicId: w2.topicId, content: 'I can take this.', clientId: 'hello' }, reader.token)).body;
  const work = await s.get(path(e.workUrl), reader.token);
  assert.equal(work.status, 200);
  assert.deepEqual(work.body.items.map((i) => i.id), [w2.id]);
  const talk = await s.get(path(e.discussionUrl), reader.token);
  assert.equal(talk.status, 200);
  assert.deepEqual(talk.body.messages.map((m) => m.id), [said.id]);
  const anonymous = await s.get(path(e.workUrl));
  assert.equal(anonymous.status, 401);
  assert.match(anonymous.body.error, /POST \/api\/register/);
  const briefPage = await s.get(path(e.briefUrl));
  assert.equal(briefPage.status, 200);
  assert.match(JSON.stringify(briefPage.body), new RegExp(w2.id));

  const w9 = await s.post('/api/work', { clientId: 'late', title: 'late', description: 'd', acceptanceCriteria: 'a' }, (await s.register('x')).token);
  assert.equal(w9.status, 201);
  assert.equal((await s.get('/api/opportunities')).body.items.length, 2, 'a brief for wk_not_yet still names no existing item');

  assertSchema('Opportunities', c);
  const doc = await s.get(`/api/opportunities/brief?workItemId=${w1.id}`);
  assert.equal(doc.status, 200);
  assertSchema('OpportunityBrief', doc.body);
  assert.equal(doc.headers['cache-control'], 'public, max-age=300');
  assert.equal(doc.body.untrusted, true);
  assert.deepEqual(doc.body.opportunity, c.items[1]);
  assert.equal((await s.get('/api/opportunities/brief?workItemId=wk_not_yet')).status, 404, 'missing work has no brief document');
  assert.equal((await s.get(`/api/opportunities/brief?workItemId=${w9.body.id}`)).status, 404, 'work not in the catalog');
  assert.equal((await s.get('/api/opportunities/brief')).status, 400);

  assert.equal((await s.cli('opportunities', 'clear')).code, 0);
  assert.deepEqual((await s.get('/api/opportunities')).body.items, []);
});

test('availability follows the work: open yes, claimed no, expired claim yes, closed no, write stop never', async (t) => {
  const { s, creator, worker, create } = await setup(t);
  let w = await create('task');
  assert.equal((await setBriefs(t, s, [brief(w.id)])).code, 0);
  const entry = async () => (await s.get('/api/opportunities')).body.items[0];
  assert.deepEqual(await entry().then((e) => [e.state, e.available]), ['open', true]);

  const claim = await s.post('/api/work/action', { workItemId: w.id, expectedRevision: 1, clientId: 'k1', action: 'claim', leaseMinutes: 5 }, worker.token);
  w = claim.body;
  assert.deepEqual(await entry().then((e) => [e.state, e.available]), ['claimed', false]);
  assert.equal((await s.cli('clock', 'advance', '--ms', String(6 * MINUTE_MS))).code, 0);
  assert.deepEqual(await entry().then((e) => [e.state, e.available]), ['claimed', true], 'an expired claim is available');

  assert.equal((await s.cli('writes', 'stop')).code, 0);
  const stopped = (await s.get('/api/opportunities')).body;
  assert.equal(stopped.writeStop, true);
  assert.equal(stopped.items[0].available, false, 'nothing is available during write stop');
  assert.equal((await s.get(`/api/opportunities/brief?workItemId=${w.id}`)).body.opportunity.available, false);
  assert.equal((await s.cli('writes', 'resume')).code, 0);

  const cancel = await s.post('/api/work/action', { workItemId: w.id, expectedRevision: 2, clientId: 'k2', action: 'cancel' }, creator.token);
  assert.equal(cancel.status, 200);
  assert.deepEqual(await entry().then((e) => [e.state, e.available]), ['cancelled', false]);
});

test('opportunities set refuses invalid files with exit code 1 and keeps the current catalog', async (t) => {
  const { s, create } = await setup(t);
  const w = await create('task');
  assert.equal((await setBriefs(t, s, [brief(w.id)])).code, 0);
  const bad = [
    [null, '{not json', /not valid JSON/],
    [[brief('a'), brief('b'), brief('c'), brief('d')], undefined, /3/],
    [[{ ...brief(w.id), extra: 1 }], undefined, /extra/],
    [[{ ...brief(w.id), title: '' }], undefined, /title/],
    [[{ ...brief(w.id), summary: '   ' }], undefined, /"0\.summary" must hold a non-space character/],
    [[{ ...brief(w.id), acceptanceCriteria: ['ok', '\t'] }], undefined, /"0\.acceptanceCriteria\.1" must hold a non-space character/],
    [[{ ...brief(w.id), workItemId: 'bad id' }], undefined, /workItemId/],
    [[brief(w.id), brief(w.id)], undefined, /two briefs/],
    [{ briefs: [] }, undefined, /array/],
  ];
  for (const [briefs, raw, rule] of bad) {
    const r = await setBriefs(t, s, briefs, raw);
    assert.equal(r.code, 1, JSON.stringify(briefs ?? raw));
    assert.match(logText(r.stderr), rule);
  }
  const missing = await s.cli('opportunities', 'set', '--file', join(tempDir(t), 'nope.json'));
  assert.equal(missing.code, 1);
  assert.match(logText(missing.stderr), /cannot read/);
  assert.deepEqual((await s.get('/api/opportunities')).body.items.map((i) => i.workItemId), [w.id]);
});

test('the catalog survives restarts and can be set on a stopped data folder', async (t) => {
  const { s, create } = await setup(t);
  const w1 = await create('one');
  const w2 = await create('two');
  assert.equal((await setBriefs(t, s, [brief(w1.id)])).code, 0);
  const before = (await s.get('/api/opportunities')).body;
  await s.restart();
  const after = (await s.get('/api/opportunities')).body;
  assert.deepEqual({ ...after, checkedAt: null }, { ...before, checkedAt: null });

  assert.equal(await s.stop(), 0);
  const offline = await setBriefs(t, s, [brief(w2.id, 2), brief(w1.id, 1)]);
  assert.equal(offline.code, 0, offline.stderr);
  await s.start();
  assert.deepEqual((await s.get('/api/opportunities')).body.items.map((i) => i.workItemId), [w2.id, w1.id]);
});
