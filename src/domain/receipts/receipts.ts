/**
 * Receipts (part 4 GET /api/receipts): lets a caller reconcile a write whose outcome it did not
 * see. Reads only the caller's own clientId namespace; changes nothing; works during write stop.
 *
 * Receipt shape (ours, part 2 "Receipt"):
 *   recorded: {outcome, kind, clientId, seq, request: <normalized request>, response: {status, body}}
 *   unknown:  {outcome, kind, clientId}
 */
import type { State } from '../state.js';
import { messageByClientId, messageJsonOf, type Message } from '../forum/forum.js';
import { workReceiptAt, workReceiptOf } from '../work/work.js';
import { workReceiptView } from '../work/views.js';
import { discussionView, erasedClientKey, statusOf, textVisible, type Reader } from '../moderation/moderation.js';

/** The clientId namespaces a receipt can be asked for (part 4 GET /api/receipts). */
export type ReceiptKind = 'message' | 'work';

/** The row of the message committed at log seq `seq` (which holds a message). */
function messageRowAt(state: State, seq: number): number | undefined {
  const seqs = state.forum.rows.seq;
  const at = seqs.upperBound(seq) - 1;
  return at >= 0 && seqs.at(at) === seq ? at : undefined;
}

/**
 * The receipt for (caller, kind, clientId) as JSON. `response.body` is the response as committed
 * then (for work, the snapshot of that revision, possibly older than the current state).
 */
export function receiptJson(state: State, callerId: string, kind: ReceiptKind, clientId: string, reader: Reader): string {
  const head = `{"outcome":"%s","kind":"${kind}","clientId":${JSON.stringify(clientId)}`;
  // A write that was committed and later erased is found by its digest (the erased record may
  // no longer show its clientId): `recorded`, with the erased placeholder as its response.
  const erasedSeq = state.moderation.erasedClients.size === 0 ? undefined : state.moderation.erasedClients.get(erasedClientKey(kind, callerId, clientId));
  if (kind === 'message') {
    const row = erasedSeq === undefined ? messageByClientId(state.forum, callerId, clientId) : messageRowAt(state, erasedSeq);
    if (row !== undefined) {
      const seq = state.forum.rows.seq.at(row);
      const stored = messageJsonOf(state.forum, row);
      const m = JSON.parse(stored) as Message;
      // The committed response as the reader may see it now (issue 25): hidden or erased text is
      // a placeholder here as on every read path, in the request echo too, whose clientId is the
      // one asked for (an erased message keeps only its `erasedClientId`).
      const status = statusOf(reader.mod, seq, m.topicId, m.authorId);
      const json = discussionView(reader, 'message', stored, status);
      const visible = textVisible(reader, status);
      const request: Record<string, unknown> = { topicId: m.topicId, content: visible ? m.content : '', clientId };
      if (m.replyTo !== null) request.replyTo = m.replyTo;
      // A signed write's signature (issue 53) is part of its request, shown with the text only.
      if (m.signature !== undefined && visible) request.signature = m.signature;
      return `${head.replace('%s', 'recorded')},"seq":${seq},"request":${JSON.stringify(request)},"response":{"status":201,"body":${json}}}`;
    }
  } else {
    const r = erasedSeq === undefined ? workReceiptOf(state.work, callerId, clientId) : workReceiptAt(state.work, erasedSeq);
    if (r) {
      const view = workReceiptView(state.work, r, reader);
      return `${head.replace('%s', 'recorded')},"seq":${r.seq},"request":${view.requestJson},"response":{"status":${r.status},"body":${view.responseJson}}}`;
    }
  }
  return `${head.replace('%s', 'unknown')}}`;
}
