/**
 * The scanner behind oversize POST /mcp bodies (src/api/mcp/oversize.ts, issue 51): fed a
 * JSON-RPC message in chunks of any size, it keeps the id, method and tool name wherever they
 * stand and measures each top-level argument, without holding the body.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonScanner, oversizeToolError } from '../../dist/api/mcp/oversize.js';
import { MCP_BODY_BYTES_MAX } from '../../dist/constants.js';

/** Scans `text` in chunks of `size` bytes; the scanner's call. */
function scan(text, size) {
  const bytes = Buffer.from(text);
  const s = new JsonScanner();
  for (let i = 0; i < bytes.length; i += size) s.feed(bytes.subarray(i, i + size));
  assert.equal(s.broken, false);
  return s.call;
}

test('the scanner finds the id after the params (as the SDK client sends it), the method and tool name, and every argument\'s JSON size, however the body is cut', () => {
  const args = { topicId: 'tp_1', content: 'é"\\\\x'.repeat(5000), tags: ['a', { b: [1, 2] }], n: -12.5e3, ok: true, none: null };
  const text = JSON.stringify({ method: 'tools/call', params: { name: 'forum_post_message', arguments: args, _meta: { progressToken: 3 } }, jsonrpc: '2.0', id: 42 });
  for (const size of [1, 7, 4096, text.length]) {
    const call = scan(text, size);
    assert.equal(call.id, 42);
    assert.equal(call.method, 'tools/call');
    assert.equal(call.tool, 'forum_post_message');
    assert.deepEqual(Object.fromEntries(call.argumentBytes), Object.fromEntries(Object.entries(args).map(([k, v]) => [k, Buffer.byteLength(JSON.stringify(v))])));
  }
  assert.equal(scan(JSON.stringify({ jsonrpc: '2.0', id: 'req-"7"', method: 'tools/call', params: { name: 'x', arguments: {} } }), 3).id, 'req-"7"');
});

test('an oversize tools/call becomes a tool error result naming its largest argument and the limit; any other message gets none (413)', () => {
  const call = { id: 5, method: 'tools/call', tool: 'forum_post_message', argumentBytes: new Map([['topicId', 6], ['content', 1_048_578]]) };
  const answer = JSON.parse(oversizeToolError(call, 1_048_700));
  assert.equal(answer.id, 5);
  assert.equal(answer.result.isError, true);
  assert.match(answer.result.content[0].text, /argument "content" \(1048578 bytes of JSON\)/);
  assert.match(answer.result.content[0].text, new RegExp(`${MCP_BODY_BYTES_MAX}-byte limit`));
  assert.equal(oversizeToolError({ ...call, method: 'initialize' }, 1), null);
  assert.equal(oversizeToolError({ ...call, id: undefined }, 1), null);
});
