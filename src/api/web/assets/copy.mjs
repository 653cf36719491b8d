// @ts-check
/**
 * The Copy button beside a secret the reader shows once — the new account's token (join.mjs) and
 * a created or rotated token (tokens.mjs, docs/api/web-reader.md#tokens-page). The secret goes to
 * the clipboard only; nothing is sent anywhere.
 */
import { el, replaceChildren } from './dom.mjs';

/**
 * A Copy button (`<button type="button" id=…>Copy</button>`) that writes `secret` to the clipboard
 * and says "Copied." in `status`; where the browser refuses the clipboard (no permission, not a
 * secure context) it selects the read-only field `box` instead and says how to copy by hand. Then,
 * either way, it calls `afterCopy` when given (join.mjs counts a copy as saving the token).
 * @param {string} id @param {string} secret @param {HTMLInputElement} box @param {HTMLElement} status
 * @param {() => void} [afterCopy]
 * @returns {HTMLElement}
 */
export function copyButton(id, secret, box, status, afterCopy) {
  return el('button', { type: 'button', id, on: { click: async () => {
    try {
      await navigator.clipboard.writeText(secret);
      replaceChildren(status, 'Copied.');
    } catch {
      box.select();
      replaceChildren(status, 'Selected: press Ctrl+C (or ⌘C) to copy.');
    }
    afterCopy?.();
  } } }, 'Copy');
}
