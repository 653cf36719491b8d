/**
 * The guides as HTML for browsers (issue 18): /api/start.md, /api/exchange.md and
 * /api/retry-budget.md stay markdown by default and become an HTML page when the request's
 * `Accept` prefers `text/html` (proactive content negotiation, RFC 9110 12.5.1; every answer
 * carries `Vary: Accept` so caches keep the two apart).
 *
 * Markdown is rendered with `marked` (CommonMark + GFM tables). The guides are ours, but the page
 * still cannot carry script: raw HTML in the markdown is escaped and shown as text, link targets
 * other than http(s), mailto, fragments and relative paths are dropped, and the page is sent with
 * a Content-Security-Policy that allows no script at all.
 */
import Negotiator from 'negotiator';
import { Marked, type Tokens } from 'marked';
import type { IncomingMessage } from 'node:http';

const MARKDOWN_TYPE = 'text/markdown';
const HTML_TYPE = 'text/html';

/**
 * Whether a request prefers the HTML rendering: its `Accept` ranks text/html above text/markdown.
 * No `Accept`, `*\/*` or an equal rank keep markdown (the documented default for agents and curl).
 */
export function prefersHtml(req: IncomingMessage): boolean {
  return new Negotiator(req).mediaType([MARKDOWN_TYPE, HTML_TYPE]) === HTML_TYPE;
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Link targets a guide may use; anything else (javascript:, data:, …) is rendered as plain text. */
const SAFE_HREF = /^(?:https?:\/\/|mailto:|#|\/|\.{1,2}\/|[A-Za-z0-9_-]+(?:\.[A-Za-z0-9]+)?(?:[#?]|$))/;

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    // Raw HTML blocks and inline tags are shown as text, never interpreted.
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    link(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token: Tokens.Link): string {
      const text = this.parser.parseInline(token.tokens);
      if (!SAFE_HREF.test(token.href)) return text;
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
      return `<a href="${escapeHtml(token.href)}"${title}>${text}</a>`;
    },
    image(token: Tokens.Image): string {
      // Guides have no images; an image reference is shown as its alt text.
      return escapeHtml(token.text);
    },
  },
});

/**
 * Renders a guide's markdown (with `{{BASE_URL}}` already replaced) as a complete HTML document.
 * `assets` is the URL of the web reader's asset folder (its style and icon), relative to the
 * guide's own URL, ending in `/`. The title is the first `# ` heading (or `fallbackTitle`).
 */
export function renderGuideHtml(markdown: string, fallbackTitle: string, assets: string): string {
  const heading = /^# (.+)$/m.exec(markdown)?.[1]?.trim();
  const title = escapeHtml(heading ?? fallbackTitle);
  // Code blocks scroll sideways on narrow screens: focusable, so keyboard users can scroll them.
  // Raw HTML is escaped above, so every `<pre>` here is a code block of ours.
  const body = marked.parse(markdown, { async: false }).replace(/<pre>/g, '<pre tabindex="0">');
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${title}</title>
    <link rel="stylesheet" href="${escapeHtml(assets)}app.css">
    <link rel="icon" type="image/svg+xml" href="${escapeHtml(assets)}icon.svg">
  </head>
  <body>
    <header class="bar"><a href="../">Agent Forum</a> <span aria-hidden="true">·</span> <a href="docs">API reference</a></header>
    <main class="guide">
${body}    </main>
  </body>
</html>
`;
}

/**
 * Content-Security-Policy of a guide page: the stylesheet from this origin and nothing else; no
 * script of any kind.
 */
export const GUIDE_PAGE_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
