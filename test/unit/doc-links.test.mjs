/**
 * Every doc path cited in the repository exists, and every cited #anchor is a heading of the page
 * it names (issue 52: the README became a front door and its sections pages under docs/, so a
 * citation of a moved or renamed section must fail here, not mislead a reader).
 *
 * What counts as a citation:
 * - in any source, test, script or markdown file: `README.md` or `docs/<path>.md`, from the
 *   repository root, optionally with `#anchor`;
 * - in a markdown file: every relative link `[text](target)`, resolved from the file's folder
 *   (links to http(s), mailto, absolute paths on the server and `{{BASE_URL}}` are not files).
 * Anchors follow GitHub's rules: the heading's text lower-cased, punctuation dropped, each space a
 * hyphen, and a repeated heading suffixed -1, -2, ….
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../helpers/server.mjs';

/** Folders never scanned: dependencies, build output, test output, git. */
const SKIP = new Set(['node_modules', 'dist', '.git', 'test-results', 'data', 'coverage']);
/** Roots scanned for citations, and the file endings read. */
const ROOTS = ['README.md', 'docs', 'src', 'scripts', 'test', '.ci'];
/** This file, whose honesty case cites pages that do not exist on purpose. */
const SELF = 'test/unit/doc-links.test.mjs';
const TEXT_FILE = /\.(md|ts|mts|mjs|js|cjs|py|sh|json|ya?ml)$|^run$/;

/** Every text file under the scanned roots, as paths relative to ROOT. */
function files(dir = ROOT, rel = '') {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = rel === '' ? d.name : `${rel}/${d.name}`;
    if (rel === '' && !ROOTS.includes(d.name)) return [];
    if (d.isDirectory()) return SKIP.has(d.name) || d.name.startsWith('.baseline') ? [] : files(join(dir, d.name), path);
    return TEXT_FILE.test(d.name) && path !== SELF ? [path] : [];
  });
}

/** GitHub's anchor for a heading's markdown text. */
function slug(heading) {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a markdown text's headings (outside code fences), in order. */
function anchorsOf(markdown) {
  const seen = new Map();
  const anchors = new Set();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+?)\s*#*$/.exec(line);
    if (m === null) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown text with fenced code blocks and inline code spans blanked (links inside code are examples). */
function withoutCode(markdown) {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/**
 * The citations in `text` of the file `file` (relative to the root), as {target, anchor, line}:
 * `target` a path relative to the root.
 */
function citationsIn(file, text) {
  const out = [];
  const lineOf = (index) => text.slice(0, index).split('\n').length;
  for (const m of text.matchAll(/(?<![\w./-])((?:docs\/[\w./-]+?|README)\.md)(?:#([\w-]+))?/g)) {
    out.push({ target: m[1], anchor: m[2] ?? null, line: lineOf(m.index) });
  }
  if (file.endsWith('.md')) {
    const prose = withoutCode(text);
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1];
      if (/^(https?:|mailto:|\/|\{\{)/.test(link)) continue;
      const [path, anchor = null] = link.split('#');
      const target = path === '' ? file : relative(ROOT, resolve(ROOT, dirname(file), path));
      out.push({ target, anchor, line: lineOf(m.index) });
    }
  }
  return out;
}

/**
 * The broken citations among `citations` of `file`, as sentences. `read(target)` gives a target's
 * text, or null when it does not exist; anchors are checked in markdown targets.
 */
function brokenCitations(file, citations, read) {
  const problems = [];
  for (const { target, anchor, line } of citations) {
    const text = read(target);
    if (text === null) {
      problems.push(`${file}:${line} cites ${target}, which does not exist`);
      continue;
    }
    if (anchor !== null && target.endsWith('.md') && !anchorsOf(text).has(anchor)) {
      problems.push(`${file}:${line} cites ${target}#${anchor}, which is no heading of it`);
    }
  }
  return problems;
}

/** A target's text from the working tree: a file's text, '' for a folder, null when missing. */
function readTarget(target) {
  const path = join(ROOT, target);
  if (!existsSync(path)) return null;
  return statSync(path).isDirectory() ? '' : readFileSync(path, 'utf8');
}

test('every doc path and #anchor cited in the repository exists', () => {
  const all = files();
  assert.ok(all.includes('README.md') && all.some((f) => f.startsWith('docs/')) && all.some((f) => f.startsWith('src/')));
  const problems = [];
  let count = 0;
  for (const file of all) {
    const citations = citationsIn(file, readFileSync(join(ROOT, file), 'utf8'));
    count += citations.length;
    problems.push(...brokenCitations(file, citations, readTarget));
  }
  assert.ok(count > 100, `citations found (${count})`);
  assert.deepEqual(problems, []);
});

test('the README links every page under docs/', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const pages = files().filter((f) => f.startsWith('docs/') && f.endsWith('.md'));
  const unlinked = pages.filter((p) => !readme.includes(`](${p}`));
  assert.deepEqual(unlinked, [], 'add each page to "Where to read next"');
});

test('the citation check is honest: a missing page, a missing heading and a bad relative link are reported', () => {
  const pages = new Map([
    ['docs/operate/a.md', '# A\n\n## Keys and the threat model\n\n## The two modes — what it means\n\n## Set-up\n\n## Set-up\n'],
    ['README.md', '# Front\n'],
  ]);
  const read = (target) => pages.get(target) ?? null;
  const text = [
    'See docs/operate/a.md#keys-and-the-threat-model and docs/operate/a.md#the-two-modes--what-it-means,',
    'docs/operate/a.md#set-up-1 and README.md, but also docs/operate/gone.md and docs/operate/a.md#keys.',
    'Links: [ok](a.md#set-up), [bad](../api/none.md), [anchor](#no-such), [web](https://example.org/x.md).',
    '`[code](not-checked.md)`',
  ].join('\n');
  const problems = brokenCitations('docs/operate/a.md', citationsIn('docs/operate/a.md', text), read);
  assert.deepEqual(problems, [
    'docs/operate/a.md:2 cites docs/operate/gone.md, which does not exist',
    'docs/operate/a.md:2 cites docs/operate/a.md#keys, which is no heading of it',
    'docs/operate/a.md:3 cites docs/api/none.md, which does not exist',
    'docs/operate/a.md:3 cites docs/operate/a.md#no-such, which is no heading of it',
  ]);
});

test('anchors follow GitHub: punctuation dropped, spaces hyphens, repeats numbered', () => {
  const anchors = anchorsOf('# Settings, headers and `/api/status` (issue 50)\n## Set-up\n## Set-up\n```\n# not a heading\n```\n## [Link](x.md) text\n');
  assert.deepEqual([...anchors], ['settings-headers-and-apistatus-issue-50', 'set-up', 'set-up-1', 'link-text']);
});
