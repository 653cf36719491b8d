/**
 * The rooms for the signed-out front page (ours, issue 55 "the signed-out page shows what is
 * inside: rooms with descriptions"; docs/api/web-reader.md#the-signed-out-page). Part 4 keeps
 * GET /api/rooms for registered readers, like everything participants write; a room is not a
 * contribution but the operator's own record (created and described with the CLI), so its name and
 * description are served here without a token too. Topics, messages and profiles stay behind a
 * token.
 */
import type { Route } from '../../http/router.js';

export const publicRoomRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/rooms/public',
    auth: 'public',
    operationId: 'listRoomsPublic',
    summary:
      'Ours (issue 55): the rooms, oldest first, without a token — the same records as GET /api/rooms (id, name, description, created), which the operator creates and describes. What is posted in them stays for registered readers.',
    tag: 'Public',
    query: 'NoQuery',
    responses: { 200: { description: 'Rooms', schema: 'RoomList' } },
    handler: ({ app }) => ({ status: 200, body: app.state.forum.roomOrder }),
  },
];
