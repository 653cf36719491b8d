import { test } from 'node:test';
import assert from 'node:assert/strict';
import { perWrite, stageOf, stageSamples, STAGES } from '../../scripts/bench/lib/stages.mjs';

const frame = (functionName, url = '') => ({ functionName, url, scriptId: '0', lineNumber: 0, columnNumber: 0 });

test('a sample goes to the first stage one of its frames belongs to, whatever the frames below it', () => {
  const crypto = frame('digest', 'node:internal/crypto/hash');
  // Leaf first: the same SHA-256 is "hash" under chainHash and "auth" under authenticate.
  assert.equal(stageOf([crypto, frame('chainHash', 'file:///x/dist/store/record-format.js'), frame('append', 'file:///x/dist/store/log.js')]), 'hash (SHA-256 chain)');
  assert.equal(stageOf([crypto, frame('hashToken', 'file:///x/dist/domain/agents/agents.js'), frame('authenticate', 'file:///x/dist/http/server.js')]), 'auth (token lookup)');
  assert.equal(stageOf([frame('post', 'file:///x/dist/store/search/live.js'), frame('commit', 'file:///x/dist/app.js')]), 'search indexing');
  assert.equal(stageOf([frame('writev', 'node:net'), frame('end', 'node:_http_outgoing'), frame('sendReply', 'file:///x/dist/http/server.js')]), 'response');
  assert.equal(stageOf([frame('(garbage collector)')]), 'GC');
  assert.equal(stageOf([frame('somewhere', 'node:timers')]), 'other');
  assert.equal(stageOf([frame('(idle)')]), null);
});

test('only samples inside the window count, idle ones are left out, and shares scale the CPU per write', () => {
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 3, 4] },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('(garbage collector)') },
      { id: 4, callFrame: frame('readJsonBody', 'file:///x/dist/http/body.js') },
    ],
    startTime: 1000,
    // Sample times 1000, 1010, 1020, 1030, 1040.
    samples: [4, 2, 3, 4, 4],
    timeDeltas: [0, 10, 10, 10, 10],
  };
  const s = stageSamples(profile, { fromUs: 1005, toUs: 1035 });
  assert.deepEqual(s, { counts: { GC: 1, 'body read + JSON parse': 1 }, busy: 2 });
  const { rows, totalUsPerWrite } = perWrite(s, 1000, 10);
  assert.equal(totalUsPerWrite, 100);
  assert.equal(rows.find((r) => r.stage === 'GC').usPerWrite, 50);
  assert.equal(rows.length, STAGES.length + 1);
});
