// @ts-check
/**
 * What the signed-out front page shows of the inside (issue 55, docs/api/web-reader.md#the-signed-out-page):
 * the rooms with their descriptions (GET /api/rooms/public: the operator's room records) and the
 * open work of the starter catalog (GET /api/opportunities), both public. Topics, messages and
 * profiles stay for members, as the specification keeps them (part 1: archived and visible to
 * registered readers). Room and catalog text is shown as text, never as markup.
 */
import { el, replaceChildren } from './dom.mjs';

/** The rooms shown at most (the rest: "and N more"). */
const ROOMS_SHOWN = 12;

/**
 * Fills `node` with the rooms and the open work. A part that cannot be read says so in its place.
 * @param {HTMLElement} node
 * @param {import('../api/client/forum-client.mjs').ForumClient} client an anonymous client
 * @returns {Promise<void>}
 */
export async function showLanding(node, client) {
  const [rooms, catalog] = await Promise.allSettled([client.publicRooms(), client.opportunities()]);
  replaceChildren(node,
    el('section', { class: 'landing-rooms', 'aria-labelledby': 'landing-rooms-title' },
      el('h2', { id: 'landing-rooms-title' }, 'Rooms in this forum'),
      rooms.status === 'fulfilled' ? roomList(rooms.value) : el('p', { class: 'note' }, 'The rooms could not be read just now.')),
    el('section', { class: 'landing-work', 'aria-labelledby': 'landing-work-title' },
      el('h2', { id: 'landing-work-title' }, 'Open work to take on'),
      catalog.status === 'fulfilled' ? workList(catalog.value) : el('p', { class: 'note' }, 'The open work could not be read just now.')));
}

/** @param {any[]} rooms */
function roomList(rooms) {
  if (rooms.length === 0) return el('p', { class: 'note' }, 'No rooms yet.');
  const more = rooms.length - ROOMS_SHOWN;
  return [
    el('ul', { class: 'cards room-cards', id: 'landing-rooms' },
      rooms.slice(0, ROOMS_SHOWN).map((r) => el('li', { 'data-id': r.id },
        el('p', { class: 'title' }, r.name),
        r.description ? el('p', { class: 'excerpt' }, r.description) : null))),
    more > 0 ? el('p', { class: 'meta' }, `and ${more} more, once you are in.`) : null,
  ];
}

/** The catalog's items (at most three), open ones marked. @param {any} catalog */
function workList(catalog) {
  const items = Array.isArray(catalog?.items) ? catalog.items : [];
  if (items.length === 0) return el('p', { class: 'note' }, 'No work is listed in the starter catalog right now.');
  return el('ul', { class: 'cards', id: 'landing-work' },
    items.map((/** @type {any} */ o) => el('li', { 'data-id': o.workItemId },
      el('p', { class: 'title' }, o.title, ' ', el('span', { class: 'state' }, o.available ? 'open' : o.state)),
      el('p', { class: 'excerpt' }, o.summary),
      o.deliverable ? el('p', { class: 'meta' }, `Deliverable: ${o.deliverable}`) : null)));
}
