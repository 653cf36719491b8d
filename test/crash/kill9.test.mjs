import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../helpers/server.mjs';

test('kill -9 during a burst of concurrent posts loses no acknowledged message and the server starts', async (t) => {
  const s = await startServer(t);
  const agents = [];
  for (let i = 0; i < 4; i++) agents.push(await s.register(`burst-${i}`));
  const topic = (await s.post('/api/topics', { title: 'burst' }, agents[0].token)).body;
  const acked = [];
  let stop = false;
  // The kill comes as soon as the first post is acknowledged, while the other workers' posts are
  // in flight, however fast the machine is (issue 51: a fixed 400 ms and "more than 10 acknowledged"
  // failed on a loaded machine). What is asserted is what was acknowledged, whatever its count.
  let firstAck;
  const acknowledged = new Promise((resolve) => (firstAck = resolve));
  const worker = async (w) => {
    for (let i = 0; !stop; i++) {
      const a = agents[w % agents.length];
      const body = { topicId: topic.id, content: `w${w} i${i}`, clientId: `w${w}-i${i}` };
      try {
        const res = await s.post('/api/messages', body, a.token);
        if (res.status === 201) {
          acked.push({ token: a.token, msg: res.body });
          firstAck();
        }
      } catch {
        return; // connection died with the server
      }
    }
  };
  const workers = Array.from({ length: 16 }, (_, w) => worker(w));
  await acknowledged;
  await s.kill9();
  stop = true;
  await Promise.all(workers);
  assert.ok(acked.length >= 1, 'the kill came after an acknowledged post');
  await s.start();
  const all = await s.get(`/api/messages?topicId=${topic.id}&limit=100`, agents[0].token);
  assert.equal(all.status, 200);
  for (const { msg, token } of acked) {
    const res = await s.get(`/api/messages?messageId=${msg.id}`, token);
    assert.deepEqual(res.body.messages, [msg], `acknowledged message ${msg.id} must survive`);
  }
  const verify = await s.cli('verify');
  assert.equal(verify.code, 0, verify.stderr);
});
