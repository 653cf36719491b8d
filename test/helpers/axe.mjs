/**
 * Accessibility checks of the browser tests (issue 55, WCAG 2.2 AA): axe-core, the standard rules
 * engine (pinned in package.json), run inside a Chromium page driven by playwright-core, and the
 * keyboard focus checks axe cannot make (is the focused element visibly marked?).
 *
 * axe's source is evaluated in the page through the DevTools protocol (playwright's
 * `page.evaluate` is CDP `Runtime.evaluate`), which the reader's Content-Security-Policy
 * (`script-src 'self'`, no inline script) does not apply to, so the page's own CSP stays as served.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The WCAG 2.2 level A and AA rule sets of axe-core: every rule tagged with one of these runs,
 * including the ones axe leaves off by default (target-size, 2.5.8 Target Size (Minimum), is
 * tagged wcag22aa). docs/api/web-reader.md#accessibility lists what they check.
 */
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/**
 * axe's landmark rules (tagged best-practice, not wcag*): every piece of content inside a landmark,
 * one main, landmarks of a kind told apart by their names (1.3.1 and 2.4.1 in practice), and one h1.
 */
export const LANDMARK_RULES = ['region', 'landmark-one-main', 'landmark-unique', 'landmark-no-duplicate-main', 'landmark-no-duplicate-banner',
  'landmark-no-duplicate-contentinfo', 'landmark-banner-is-top-level', 'landmark-main-is-top-level', 'landmark-complementary-is-top-level',
  'landmark-contentinfo-is-top-level', 'page-has-heading-one'];

/**
 * Every axe-core violation on the page as it is now, of any impact: the rules tagged WCAG_TAGS,
 * then LANDMARK_RULES; one line per rule: "rule-id (impact): help — selector: what failed; …".
 * Input: a playwright Page. Output: an array of strings, empty when axe finds nothing.
 * @param {import('playwright-core').Page} page
 * @returns {Promise<string[]>}
 */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async ({ tags, landmarks }) => {
    const wcag = await window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    const landmark = await window.axe.run(document, { runOnly: { type: 'rule', values: landmarks }, resultTypes: ['violations'] });
    return { violations: [...wcag.violations, ...landmark.violations] };
  }, { tags: WCAG_TAGS, landmarks: LANDMARK_RULES });
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 6).map((n) => `${n.target.join(' ')}: ${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 200)}`).join('; ')}`);
}

/**
 * What the focused element looks like: its tag, text, and whether a focus indicator is drawn
 * (an outline of at least 2 px, or a box-shadow) while it matches :focus-visible; the contrast
 * of an outline's colour with the background around it (WCAG 1.4.11 asks 3:1 of a focus
 * indicator; null for a box-shadow); and whether it is on screen (2.4.11: not entirely hidden).
 * Input: a playwright Page. Output: `{tag, id, text, focusVisible, indicated, ringContrast,
 * onScreen}` (tag 'BODY' when nothing is focused).
 * @param {import('playwright-core').Page} page
 */
export function focusState(page) {
  return page.evaluate(() => {
    const a = /** @type {HTMLElement} */ (document.activeElement ?? document.body);
    const style = getComputedStyle(a);
    const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
    const shadow = style.boxShadow !== 'none' && style.boxShadow !== '';
    const r = a.getBoundingClientRect();
    const onScreen = r.bottom > 0 && r.right > 0 && r.top < window.innerHeight && r.left < window.innerWidth && r.width > 0 && r.height > 0;
    let focusVisible = false;
    try {
      focusVisible = a.matches(':focus-visible');
    } catch {
      focusVisible = false;
    }
    /** @param {string} c a computed colour, rgb() or rgba() */
    const rgba = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const [r, g, b, alpha = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return { r, g, b, alpha };
    };
    /** Relative luminance (WCAG 2). @param {{r: number, g: number, b: number}} c */
    const luminance = ({ r, g, b }) => {
      const f = (/** @type {number} */ v) => ((v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    // The outline is drawn just outside the element: over its parent's background (the first one not transparent).
    let around = null;
    for (let p = a.parentElement; p && !around; p = p.parentElement) {
      const c = rgba(getComputedStyle(p).backgroundColor);
      if (c && c.alpha > 0) around = c;
    }
    const ring = outline ? rgba(style.outlineColor) : null;
    let ringContrast = null;
    if (ring) {
      const [l1, l2] = [luminance(ring), luminance(around ?? { r: 255, g: 255, b: 255 })].sort((x, y) => y - x);
      ringContrast = Math.round(((l1 + 0.05) / (l2 + 0.05)) * 100) / 100;
    }
    return { tag: a.tagName, id: a.id, text: (a.getAttribute('aria-label') ?? a.textContent ?? '').trim().slice(0, 60), focusVisible, indicated: outline || shadow, ringContrast, onScreen };
  });
}

/** A focus state in words, for assertion messages. @param {{tag: string, id: string, text: string}} f */
export const describeFocus = (f) => `${f.tag}${f.id ? `#${f.id}` : ''} "${f.text}"`;

/**
 * Controls smaller than 24×24 CSS px, with no exception (axe's target-size rule applies WCAG 2.2
 * 2.5.8 with its spacing exception, and leaves links in text alone): visible buttons, inputs,
 * selects, textareas, summaries and the links of the page's header bar (#bar). A checkbox or radio counts its label too
 * (clicking the label toggles it). Input: a playwright Page. Output: one line per control,
 * "tag#id "text" W×H".
 * @param {import('playwright-core').Page} page
 * @returns {Promise<string[]>}
 */
export function smallTargets(page) {
  return page.evaluate(() => {
    const MIN = 24;
    const out = [];
    const visible = (/** @type {Element} */ e) => e.checkVisibility?.({ visibilityProperty: true }) !== false && e.getClientRects().length > 0;
    for (const e of document.querySelectorAll('button, input:not([type="hidden"]), select, textarea, summary, #bar a[href]')) {
      if (!visible(e) || e.closest('.visually-hidden')) continue;
      let r = e.getBoundingClientRect();
      const input = /** @type {HTMLInputElement} */ (e);
      if (e.tagName === 'INPUT' && (input.type === 'checkbox' || input.type === 'radio') && input.labels?.length) {
        const l = input.labels[0].getBoundingClientRect();
        r = { width: Math.max(r.width, l.width), height: Math.max(r.height, l.height) };
        if (r.width >= MIN && r.height >= MIN) continue;
      }
      if (r.width < MIN - 0.01 || r.height < MIN - 0.01) out.push(`${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} "${(e.textContent ?? '').trim().slice(0, 40)}" ${Math.round(r.width)}×${Math.round(r.height)}`);
    }
    return out;
  });
}
