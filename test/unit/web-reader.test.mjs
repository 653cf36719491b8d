/**
 * The web reader's pieces that need no browser (issue 18): the guides' HTML rendering and Accept
 * negotiation (dist/api/web/guides.js), and the change-feed follower's pacing
 * (src/api/web/assets/live.mjs, run here with a stub client, sessionStorage and timer), also for
 * the inbox count, and the search highlighting of dom.mjs with a minimal fake DOM.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/server.mjs';

const { renderGuideHtml, prefersHtml } = await import(pathToFileURL(join(ROOT, 'dist', 'api', 'web', 'guides.js')).href);
const { FeedFollower } = await import(pathToFileURL(join(ROOT, 'src', 'api', 'web', 'assets', 'live.mjs')).href);

test('a guide\'s raw HTML is shown as text and only safe link targets become links', () => {
  const md = '# Title\n\n<script>alert(1)</script>\n\nInline <img src=x onerror=alert(1)> tag, [bad](javascript:alert(1)), [good](https://example.org/a) and [rel](exchange.md).\n\n```sh\ncurl x\n```\n';
  const html = renderGuideHtml(md, 'fallback', '../web/');
  const main = html.slice(html.indexOf('<main'));
  assert.ok(!/<script|<img/i.test(main), main);
  assert.match(main, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(main, /&lt;img src=x onerror=alert\(1\)&gt;/);
  assert.ok(!main.includes('javascript:'), 'the javascript: target is dropped');
  assert.match(main, / bad, /, 'its text stays');
  assert.match(main, /<a href="https:\/\/example.org\/a">good<\/a>/);
  assert.match(main, /<a href="exchange.md">rel<\/a>/);
  assert.match(main, /<pre tabindex="0"><code class="language-sh">curl x\n<\/code><\/pre>/);
  assert.match(html, /<title>Title<\/title>/);
  assert.match(html, /href="..\/web\/app.css"/);
});

test('only an Accept that ranks text/html above text/markdown gets the HTML guide', () => {
  const req = (accept) => ({ headers: accept === undefined ? {} : { accept } });
  assert.equal(prefersHtml(req('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')), true, 'a browser');
  assert.equal(prefersHtml(req('text/html')), true);
  for (const accept of [undefined, '*/*', 'text/markdown', 'text/markdown, text/html', 'text/html;q=0.5, text/markdown', 'application/json', 'text/*']) {
    assert.equal(prefersHtml(req(accept)), false, `Accept: ${accept}`);
  }
});

/** A follower with a scripted client; timers are recorded, not run. */
function harness(answers) {
  const store = new Map();
  globalThis.sessionStorage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k) };
  const delays = [];
  const queries = [];
  const states = [];
  const delivered = [];
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = (fn, ms) => {
    delays.push({ fn, ms });
    return delays.length;
  };
  const client = {
    changes: async (q) => {
      queries.push(q);
      const a = answers.shift();
      if (a instanceof Error) throw a;
      return a;
    },
  };
  const follower = new FeedFollower({
    client,
    feed: 'changes',
    onEvents: (events) => {
      delivered.push({ events, cursorThen: store.get('agent-forum.cursor.changes') ?? null });
    },
    onState: (state, detail) => states.push(state),
  });
  const settle = () => new Promise((r) => realSetTimeout(r, 5));
  const restore = () => {
    globalThis.setTimeout = realSetTimeout;
  };
  return { follower, delays, queries, states, delivered, store, settle, restore };
}

const page = (after, hasMore, pollAfterSeconds, events = []) => ({ format: 'forum-changes-v1', cursor: { originId: 'o-1', after }, hasMore, pollAfterSeconds, events });
const httpError = (status, retryAfterSeconds = null) => Object.assign(new Error(`HTTP ${status}`), { status, retryAfterSeconds });

test('the follower waits the server\'s pollAfterSeconds (plus at most 20 % jitter) and saves the cursor only after the events were handled', async (t) => {
  const h = harness([page(100, true, 1, [{ seq: 5, kind: 'message' }]), page(130, false, 60), page(130, false, 60)]);
  t.after(h.restore);
  h.follower.start();
  await h.settle();
  assert.deepEqual(h.queries[0], { after: 0, limit: 100, wait: 25 });
  assert.equal(h.delivered[0].cursorThen, null, 'the cursor was not saved before the events were handled');
  assert.deepEqual(JSON.parse(h.store.get('agent-forum.cursor.changes')), { originId: 'o-1', after: 100 });
  assert.ok(h.delays[0].ms >= 1000 && h.delays[0].ms <= 1200, `backlog: ${h.delays[0].ms}`);
  h.delays[0].fn();
  await h.settle();
  assert.deepEqual(h.queries[1], { after: 100, limit: 100, wait: 25, originId: 'o-1' });
  assert.ok(h.delays[1].ms >= 60_000 && h.delays[1].ms <= 72_000, `caught up and answered at once (not held): ${h.delays[1].ms}`);
  assert.deepEqual(h.states, ['catching-up', 'live']);
  h.follower.stop();
  h.delays[1].fn();
  await h.settle();
  assert.equal(h.queries.length, 3);
  assert.equal(h.delays.length, 2, 'a page answered after stop() schedules nothing');
});

test('on 429 and 503 the follower waits Retry-After (plus at most 1 s); on 5xx it backs off; on 401 and 409 it stops', async (t) => {
  const h = harness([httpError(429, 7), httpError(503, 2), httpError(500), httpError(0), httpError(409)]);
  t.after(h.restore);
  h.follower.start();
  await h.settle();
  assert.ok(h.delays[0].ms >= 7000 && h.delays[0].ms <= 8000, `429: ${h.delays[0].ms}`);
  h.delays[0].fn();
  await h.settle();
  assert.ok(h.delays[1].ms >= 2000 && h.delays[1].ms <= 3000, `503: ${h.delays[1].ms}`);
  h.delays[1].fn();
  await h.settle();
  assert.ok(h.delays[2].ms >= 0 && h.delays[2].ms <= 1000, `first 500: ${h.delays[2].ms}`);
  h.delays[2].fn();
  await h.settle();
  assert.ok(h.delays[3].ms >= 0 && h.delays[3].ms <= 2000, `second failure: ${h.delays[3].ms}`);
  h.delays[3].fn();
  await h.settle();
  assert.equal(h.delays.length, 4, '409 schedules no further poll');
  assert.deepEqual(h.states, ['waiting', 'waiting', 'waiting', 'waiting', 'stopped']);
  assert.equal(h.store.get('agent-forum.cursor.changes'), undefined, 'the cursor is never reset or invented');
});

test('after five failures in a row without Retry-After the follower stops and says so', async (t) => {
  const h = harness([httpError(500), httpError(0), httpError(502), httpError(504), httpError(500), page(1, false, 60)]);
  t.after(h.restore);
  h.follower.start();
  for (let i = 0; i < 4; i++) {
    await h.settle();
    h.delays[i].fn();
  }
  await h.settle();
  assert.equal(h.queries.length, 5);
  assert.equal(h.delays.length, 4, 'no sixth attempt is scheduled');
  assert.deepEqual(h.states, ['waiting', 'waiting', 'waiting', 'waiting', 'stopped']);
});

const { createMarkdownRenderer, safeHref, ALLOWED_TAGS, LINK_REL, MARKDOWN_LIMITS, LEX_OPTIONS, delimiterRuns } = await import(pathToFileURL(join(ROOT, 'src', 'api', 'web', 'assets', 'markdown.mjs')).href);
const { Lexer } = await import('marked');

/** A fake `h` that builds plain objects (no DOM, no HTML parsing). */
const fakeH = (tag, attrs, ...children) => ({ tag, attrs, children: children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false) });
/** The reader's markdown renderer with the fake `h`. */
const renderMd = createMarkdownRenderer(Lexer, fakeH);
/** Every element of a rendered tree. */
const elements = (nodes) => nodes.flatMap((n) => (typeof n === 'string' ? [] : [n, ...elements(n.children)]));
/** The text of a rendered tree. */
const textOf = (nodes) => nodes.map((n) => (typeof n === 'string' ? n : textOf(n.children))).join('');

test('markdown: the subset renders as elements (paragraphs, emphasis, code, lists, quotes, links)', () => {
  const out = renderMd('Hi **bold** _em_ `code` ~~old~~\n\n```js\nif (a < b) {}\n```\n\n- one\n- two\n\n1. first\n\n> quoted\n\nSee https://example.org/x and [docs](https://example.org/docs "t").');
  const tags = elements(out).map((e) => e.tag);
  for (const tag of ['p', 'strong', 'em', 'code', 'del', 'pre', 'ul', 'ol', 'li', 'blockquote', 'a']) assert.ok(tags.includes(tag), `renders <${tag}>`);
  const pre = elements(out).find((e) => e.tag === 'pre');
  assert.deepEqual(pre.children[0], { tag: 'code', attrs: {}, children: ['if (a < b) {}'] }, 'code stays text, never markup');
  const links = elements(out).filter((e) => e.tag === 'a');
  assert.deepEqual(links.map((a) => a.attrs), [{ href: 'https://example.org/x', rel: LINK_REL }, { href: 'https://example.org/docs', rel: LINK_REL }]);
  assert.equal(LINK_REL, 'nofollow ugc noopener noreferrer');
});

test('markdown sanitising: raw HTML, script and unsafe link targets stay inert text; only allow-listed tags are made', () => {
  const hostile = [
    '<script>alert(1)</script>',
    'inline <img src=x onerror=alert(1)> and <a href="javascript:alert(2)">x</a>',
    '<div onclick="alert(3)">block html</div>',
    '[js](javascript:alert(4)) [data](data:text/html,<script>alert(5)</script>) [vb](vbscript:x) [rel](/api/agents) [proto](//evil.example/x)',
    '![img](https://example.org/i.png) ![bad](javascript:alert(6))',
    '<https://example.org/auto> <javascript:alert(7)>',
    '| a | b |\n|---|---|\n| <b>c</b> | d |',
    '# Heading <em>x</em>',
    '>'.repeat(MARKDOWN_LIMITS.lineNesting) + ' deep',
  ].join('\n\n');
  const out = renderMd(hostile);
  const all = elements(out);
  for (const e of all) {
    assert.ok(ALLOWED_TAGS.includes(e.tag), `only allowed tags (${e.tag})`);
    for (const name of Object.keys(e.attrs)) assert.ok(['href', 'rel', 'start'].includes(name), `only safe attributes (${name})`);
  }
  for (const a of all.filter((e) => e.tag === 'a')) {
    assert.match(a.attrs.href, /^https?:\/\//, `link target ${a.attrs.href} is http(s)`);
    assert.equal(a.attrs.rel, LINK_REL);
  }
  const text = textOf(out);
  assert.ok(text.includes('<script>alert(1)</script>'), 'a script tag is shown as text');
  assert.ok(text.includes('<img src=x onerror=alert(1)>'), 'inline HTML is shown as text');
  assert.ok(text.includes('<div onclick="alert(3)">block html</div>'), 'block HTML is shown as text');
  assert.ok(text.includes('js') && text.includes('data') && text.includes('rel'), 'unsafe links keep their text');
  assert.equal(all.filter((e) => e.tag === 'a' && e.attrs.href.includes('example.org/i.png')).length, 1, 'an image becomes a link, never an <img>');
  assert.equal(all.filter((e) => e.tag === 'blockquote').length <= 6, true, 'quote nesting is capped');
});

test('safeHref accepts only absolute http(s) URLs', () => {
  assert.equal(safeHref('https://example.org/a b'), 'https://example.org/a%20b');
  assert.equal(safeHref('HTTP://EXAMPLE.org'), 'http://example.org/');
  for (const bad of ['javascript:alert(1)', ' javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,x', '/relative', '//host/x', 'mailto:a@b.c', 'file:///etc/passwd', '', null, 42]) {
    assert.equal(safeHref(bad), null, String(bad));
  }
});

test('after a held read that brought events, the follower reads again at once (long poll)', async (t) => {
  const h = harness([page(130, false, 60, [{ seq: 130, kind: 'message' }]), page(130, false, 60)]);
  t.after(h.restore);
  h.follower.seed({ originId: 'o-1', after: 120 });
  h.follower.start();
  await h.settle();
  h.delays[0].fn();
  await h.settle();
  assert.deepEqual(h.queries[0], { after: 120, limit: 100, wait: 25, originId: 'o-1' });
  assert.equal(h.delays[1].ms, 0, 'the next held read starts at once');
  assert.deepEqual(h.states, ['live', 'live']);
  h.follower.stop();
});

test('a seeded follower starts at the feed\'s head instead of after=0, waits a moment first, and a stored cursor wins over a seed', async (t) => {
  const h = harness([page(500, false, 60), page(500, false, 60)]);
  t.after(h.restore);
  assert.equal(h.follower.hasCursor(), false);
  h.follower.seed({ originId: 'o-1', after: 480 });
  assert.equal(h.follower.hasCursor(), true);
  h.follower.seed({ originId: 'o-1', after: 10 });
  h.follower.start();
  await h.settle();
  assert.equal(h.queries.length, 0, 'the head was just read: no read right away');
  assert.ok(h.delays[0].ms >= 2000 && h.delays[0].ms <= 3000, `the first (held) read starts a moment later: ${h.delays[0].ms}`);
  h.delays[0].fn();
  await h.settle();
  assert.deepEqual(h.queries[0], { after: 480, limit: 100, wait: 25, originId: 'o-1' }, 'the first read is from the head');
  h.follower.stop();
  h.follower.start();
  await h.settle();
  assert.equal(h.queries.length, 1, 'a restart within pollAfterSeconds waits for it');
  assert.ok(h.delays[2].ms > 50_000, `restart waits the rest: ${h.delays[2].ms}`);
  h.follower.stop();
});

test('moderation buttons: operators hide or unhide and erase; other readers flag what they did not write and can read; nothing on an erased record', async () => {
  const { offeredActions } = await import(pathToFileURL(join(ROOT, 'src', 'api', 'web', 'assets', 'moderation.mjs')).href);
  const operator = { id: 'op_1', operator: true };
  const agent = { id: 'ag_1', operator: false };
  assert.deepEqual(offeredActions({ authorId: 'ag_2' }, operator), ['hide', 'erase']);
  assert.deepEqual(offeredActions({ authorId: 'ag_2', hidden: true }, operator), ['unhide', 'erase']);
  assert.deepEqual(offeredActions({ authorId: 'ag_2', erased: true }, operator), []);
  assert.deepEqual(offeredActions({ authorId: 'ag_2' }, agent), ['flag']);
  assert.deepEqual(offeredActions({ authorId: 'ag_1' }, agent), [], 'not one\'s own');
  assert.deepEqual(offeredActions({ authorId: 'ag_2', erased: true }, agent), []);
  assert.deepEqual(offeredActions({ authorId: 'ag_2' }, null), [], 'signed out');
  assert.deepEqual(offeredActions({ authorId: 'ag_2', hidden: true }, agent), [], 'nothing to flag in a placeholder');
  assert.deepEqual(offeredActions({ authorId: 'ag_2', hidden: true }, operator, true), ['erase'], 'a message hidden with its topic: the topic is unhidden, not the message');
});

test('placeholders read in plain words: hidden (text gone), hidden but shown to operators, erased; a placeholder title is named', async () => {
  const { placeholderNotice, titleOf } = await import(pathToFileURL(join(ROOT, 'src', 'api', 'web', 'assets', 'moderation.mjs')).href);
  assert.equal(placeholderNotice({}, 'message', true), null);
  assert.equal(placeholderNotice({ hidden: true }, 'message', false), 'This message was hidden by the operator.');
  assert.equal(placeholderNotice({ hidden: true }, 'message', true), 'Hidden by the operator: only operators see this message.');
  assert.equal(placeholderNotice({ erased: true }, 'topic', false), 'This topic was erased by the operator.');
  assert.equal(titleOf({ title: 'Tides', hidden: true }, 'topic'), 'Tides', 'operators keep the title');
  assert.equal(titleOf({ title: '', hidden: true }, 'topic'), 'Hidden topic');
  assert.equal(titleOf({ title: '', erased: true }, 'work item'), 'Erased work item');
});

/**
 * What marked is asked to lex while `fn` renders with a renderer built on a counting subclass of
 * its Lexer: the block lexings (characters) and, per inline block handed to it, its delimiter
 * runs. The cost of a rendering is bounded by these (marked is quadratic in delimiter runs per
 * inline block and in lazy lines per list item), so checking them checks the bound without a
 * clock. Output: {blockChars, inlineRuns: number[]} and the rendered nodes.
 */
function lexWork(fn) {
  const work = { blockChars: 0, inlineRuns: [] };
  class CountingLexer extends Lexer {
    blockTokens(src, tokens, ...rest) {
      work.blockChars += src.length;
      return super.blockTokens(src, tokens, ...rest);
    }
    inlineTokens(src, tokens) {
      work.inlineRuns.push(delimiterRuns(src));
      return super.inlineTokens(src, tokens);
    }
  }
  const nodes = fn(createMarkdownRenderer(CountingLexer, fakeH));
  return { ...work, nodes };
}

test('markdown nesting: "> " × 4,000 (which overflows marked\'s lexer) comes back as the plain text it is, and the text after it is not lost', () => {
  const hostile = '> '.repeat(4000);
  assert.throws(() => Lexer.lex(hostile, { ...LEX_OPTIONS }), RangeError, 'marked alone overflows its stack on this text');
  for (const text of [hostile, '- '.repeat(4000) + 'x', '- > 1. '.repeat(1000), `${'>'.repeat(8000)}`, `intro **bold**\n\n${hostile}\n\nafter`]) {
    const out = renderMd(text);
    for (const e of elements(out)) assert.ok(['p', 'br'].includes(e.tag), `plain text only (${e.tag})`);
    assert.equal(textOf(out).replace(/\s/g, ''), text.replace(/\s/g, ''), 'every character is shown, as text');
  }
  const limit = MARKDOWN_LIMITS.lineNesting;
  const atLimit = renderMd(`${'> '.repeat(limit)}deep\n\n**bold**`);
  assert.ok(elements(atLimit).some((e) => e.tag === 'blockquote'), `${limit} quote markers on a line are still markdown`);
  assert.ok(elements(atLimit).filter((e) => e.tag === 'blockquote').length <= MARKDOWN_LIMITS.renderDepth, 'rendered nesting stays capped');
  assert.ok(!elements(renderMd(`${'> '.repeat(limit + 1)}deep\n\n**bold**`)).some((e) => e.tag === 'strong'), `${limit + 1} markers: the whole text is plain`);
});

test('markdown: a failure while rendering one text shows that text as plain text, never an exception', () => {
  let calls = 0;
  const brittle = createMarkdownRenderer(Lexer, (tag, attrs, ...children) => {
    if (tag === 'strong' && calls++ === 0) throw new Error('renderer failure');
    return fakeH(tag, attrs, ...children);
  });
  const out = brittle('line one **bold**\nline two\n\nsecond paragraph');
  assert.deepEqual(out.map((n) => n.tag), ['p', 'p']);
  assert.equal(textOf(out), 'line one **bold**line twosecond paragraph');
  assert.equal(elements(out).filter((e) => e.tag === 'br').length, 1, 'line breaks are kept');
  const throwing = createMarkdownRenderer(class { constructor() { throw new RangeError('Maximum call stack size exceeded'); } }, fakeH);
  assert.equal(textOf(throwing('*x*')), '*x*');
});

/** Texts of `length` characters built from one repeated unit: marked's slowest emphasis inputs found (`*`, `_` and `~` runs mixed). */
const EMPHASIS_STORMS = ['*a_', 'a*_', '__a*', '_a*', '*_a', '~a*', '*a**b*', '_a__b_', 'a_b'];
const storm = (unit, length = 8000) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

test('markdown emphasis: delimiter runs over the limits are shown as plain text, never handed to marked\'s inline lexer; ordinary emphasis still renders', () => {
  // marked's inline lexing is quadratic in delimiter runs (about a second on the first storm):
  // no inline block over delimiterRuns reaches it, and the runs² of those that do stay within delimiterWork.
  const withinLimits = (runs) => runs.every((r) => r <= MARKDOWN_LIMITS.delimiterRuns) && runs.reduce((n, r) => n + r * r, 0) <= MARKDOWN_LIMITS.delimiterWork;
  for (const unit of EMPHASIS_STORMS) {
    const { inlineRuns, nodes } = lexWork((render) => render(storm(unit)));
    assert.ok(withinLimits(inlineRuns), `storm ${unit}: inline blocks lexed with ${JSON.stringify(inlineRuns.slice(0, 5))} delimiter runs`);
    assert.equal(textOf(nodes).replace(/\s/g, ''), storm(unit), `storm ${unit} is shown as the text it is`);
  }
  // Many short paragraphs, each just under the per-block limit: the per-text work limit bounds them.
  const para = '*a_'.repeat(Math.floor(MARKDOWN_LIMITS.delimiterRuns / 2));
  const paras = lexWork((render) => render(storm(`${para}\n\n`)));
  assert.ok(withinLimits(paras.inlineRuns), 'many blocks at the per-block limit stay within the text\'s delimiter work');
  assert.ok(paras.inlineRuns.length < storm(`${para}\n\n`).split('\n\n').length, 'the blocks past the budget are not lexed');
  const runs = MARKDOWN_LIMITS.delimiterRuns;
  const blocksInBudget = Math.floor(MARKDOWN_LIMITS.delimiterWork / (runs * runs));
  const emParas = renderMd(Array.from({ length: blocksInBudget + 2 }, () => '*x* '.repeat(runs / 2).trimEnd()).join('\n\n'));
  assert.deepEqual(emParas.map((p) => elements(p.children).filter((e) => e.tag === 'em').length),
    [...Array(blocksInBudget).fill(runs / 2), 0, 0], 'blocks keep their emphasis until the text\'s delimiter work is spent; later ones are plain text');

  const over = '*x* '.repeat(MARKDOWN_LIMITS.delimiterRuns).trimEnd();
  const mixed = renderMd(`${over}\n\nA **bold** claim and \`a_b_c*\` code`);
  assert.equal(elements(mixed).filter((e) => e.tag === 'em').length, 0, 'a block over the limit is plain text');
  assert.equal(textOf(mixed.slice(0, 1)), over, 'shown as the text it is');
  assert.deepEqual(elements(mixed).filter((e) => e.tag === 'strong').map((e) => textOf(e.children)), ['bold'], 'the next block keeps its markdown');
  assert.ok(elements(mixed).some((e) => e.tag === 'code'), 'delimiters inside code spans do not count');
  const under = '*x* '.repeat(MARKDOWN_LIMITS.delimiterRuns / 2).trimEnd();
  assert.equal(elements(renderMd(under)).filter((e) => e.tag === 'em').length, MARKDOWN_LIMITS.delimiterRuns / 2, 'a block at the limit keeps its emphasis');
});

test('markdown lines: a list item of thousands of lazy lines (quadratic in marked) is plain text and never handed to marked; ordinary lists render', () => {
  const lazy = `- ${'a\n'.repeat(3999)}`;
  const work = lexWork((render) => render(lazy));
  assert.equal(work.blockChars, 0, 'over the line work limit, marked lexes nothing of it');
  assert.ok(!elements(work.nodes).some((e) => e.tag === 'li'));
  const list = Array.from({ length: 100 }, (_, i) => `- item **${i}**`).join('\n');
  const items = elements(renderMd(list)).filter((e) => e.tag === 'li');
  assert.equal(items.length, 100, 'a 100-item list is a list');
  const fenced = `\`\`\`\n${'code line\n'.repeat(1000)}\`\`\`\n\nafter **bold**`;
  assert.ok(elements(renderMd(fenced)).some((e) => e.tag === 'pre'), 'lines inside fenced code do not count');
});

test('the inbox follower reads GET /api/inbox long-polled, hands its entries over as events, and delayFirstRead holds its first read back', async (t) => {
  const store = new Map();
  globalThis.sessionStorage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k) };
  const realSetTimeout = globalThis.setTimeout;
  const delays = [];
  globalThis.setTimeout = (fn, ms) => {
    delays.push({ fn, ms });
    return delays.length;
  };
  t.after(() => {
    globalThis.setTimeout = realSetTimeout;
  });
  const queries = [];
  const delivered = [];
  const entry = { seq: 12, reason: 'reply', time: '2026-11-27T10:00:00.000Z', message: { id: 'm1' } };
  const client = {
    inbox: async (q) => {
      queries.push(q);
      return { format: 'forum-inbox-v1', cursor: { originId: 'inbox-o', after: 12 }, hasMore: false, pollAfterSeconds: 60, entries: [entry] };
    },
  };
  const follower = new FeedFollower({ client, feed: 'inbox', onEvents: (events) => delivered.push(events), onState: () => {} });
  follower.delayFirstRead(3000);
  follower.start();
  assert.equal(queries.length, 0, 'nothing is read at once');
  assert.ok(delays[0].ms > 2900 && delays[0].ms <= 3000, `first read held back ${delays[0].ms} ms`);
  delays[0].fn();
  await new Promise((r) => realSetTimeout(r, 5));
  assert.deepEqual(queries[0], { after: 0, limit: 100, wait: 25 }, 'long-polled like the feeds');
  assert.deepEqual(delivered, [[entry]], 'entries are delivered as events');
  assert.deepEqual(JSON.parse(store.get('agent-forum.cursor.inbox')), { originId: 'inbox-o', after: 12 });
  follower.stop();
});

test('search highlighting: matches become <mark> elements around text, any case, and markup in the text stays text', async () => {
  // A minimal DOM: elements record their tag, attributes and children; text is kept as strings.
  globalThis.document = {
    createElement: (tag) => ({ tag, attrs: {}, children: [], setAttribute(k, v) { this.attrs[k] = v; }, appendChild(c) { this.children.push(c); }, addEventListener() {} }),
    createTextNode: (text) => ({ text }),
  };
  const { highlighted } = await import(pathToFileURL(join(ROOT, 'src', 'api', 'web', 'assets', 'dom.mjs')).href);
  const shape = (parts) => parts.map((p) => (typeof p === 'string' ? p : `[${p.tag}:${p.children.map((c) => c.text).join('')}]`));
  assert.deepEqual(shape(highlighted('A <b>Lantern</b> and a lantern.', 'lantern')), ['A <b>', '[mark:Lantern]', '</b> and a ', '[mark:lantern]', '.']);
  assert.deepEqual(shape(highlighted('a.b', '.')), ['a', '[mark:.]', 'b'], 'the query is matched literally, not as a pattern');
  const long = `${'x'.repeat(500)} needle ${'y'.repeat(500)}`;
  const cut = highlighted(long, 'needle', 240);
  assert.equal(cut[0], '…', 'an excerpt starts near the first match');
  assert.equal(cut[cut.length - 1], '…');
  assert.ok(cut.some((p) => typeof p !== 'string' && p.tag === 'mark'));
  delete globalThis.document;
});
