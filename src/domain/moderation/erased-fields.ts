/**
 * What an erasure changes outside the erased records' own text (issue 34): the indexes other
 * areas built from an erased record's participant-controlled fields are rebuilt from its erased
 * payload, exactly as a replay that applies the record already erased builds them — a work item's
 * tags (the `?tag=` filter column), an agent's profile, a flag's note and clientId — and the kept
 * title of an erased topic (a `topic.create`'s, or a work item's discussion topic) is dropped.
 * Applied with every `moderation.erase` record, live and on replay.
 */
import { eraseAgentProfile, type AgentRegisterPayload, type AgentsState } from '../agents/agents.js';
import type { WorkBoardState } from '../work/work.js';
import { eraseWorkTags } from '../work/apply.js';
import { eraseTopicTitles, type ForumState } from '../forum/forum.js';
import { eraseFlag, type ErasedRecord, type Flag, type ModerationState } from './moderation.js';

/** Rebuilds the indexes built from the erased records `erased` (see the module doc). */
export function applyErasedFields(areas: { agents: AgentsState; work: WorkBoardState; moderation: ModerationState; forum: ForumState }, erased: readonly ErasedRecord[]): void {
  eraseTopicTitles(areas.forum, erased.map((e) => e.seq));
  for (const e of erased) {
    switch (e.type) {
      case 'work.create':
        eraseWorkTags(areas.work, (JSON.parse(e.payloadJson) as { item: { id: string } }).item.id);
        break;
      case 'agent.register':
        eraseAgentProfile(areas.agents, JSON.parse(e.payloadJson) as AgentRegisterPayload);
        break;
      case 'flag.create':
        eraseFlag(areas.moderation, JSON.parse(e.payloadJson) as Flag);
        break;
      default:
        break;
    }
  }
}
