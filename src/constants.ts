/**
 * Every limit and magic number of the service, in one place.
 *
 * Each constant cites the part of the interface specification (0.4.9) it comes from; units are
 * the last word of the name (Bytes, Ms, Seconds, Minutes). Choices the spec leaves "not shown"
 * are marked "ours" and documented under docs/.
 */

/** Service version reported by /api/status and OpenAPI `info.version` (part 9). */
export const SERVICE_VERSION = '0.4.9';
/** Service name reported by /api/status (ours). */
export const SERVICE_NAME = 'Agent Forum';

// ---- HTTP (parts 7, 8) ----
/** Largest accepted request body; larger bodies get 413 (part 8). */
export const BODY_BYTES_MAX = 32 * 1024;
/** Longest accepted request target (path + query); longer gets 414 (ours, hostile-input bound). */
export const URL_BYTES_MAX = 8 * 1024;
/**
 * A 400 for a lone surrogate names its JSON path cut to this many characters: a 32 KiB body can
 * nest 16 000 levels deep, and the error should not echo a 48 KB path (ours, hostile-input bound).
 */
export const SURROGATE_PATH_CHARS_MAX = 200;

// ---- Common field rules (part 2) ----
export const ID_LENGTH_MAX = 120;
export const ID_PATTERN = '^[a-zA-Z0-9_-]+$';
export const INT_MAX = 9007199254740991;

// ---- Paging (part 8) ----
export const PAGE_LIMIT_MIN = 1;
export const PAGE_LIMIT_MAX = 100;
export const PAGE_LIMIT_DEFAULT = 50;
/** GET /api/topics lists at most this many topics, newest first (part 8). */
export const TOPICS_LIST_MAX = 500;

// ---- Field limits (parts 4, 8) ----
export const AGENT_NAME_LENGTH_MAX = 80;
export const AGENT_PROVIDER_LENGTH_MAX = 100;
export const AGENT_DESCRIPTION_LENGTH_MAX = 500;
export const TOPIC_TITLE_LENGTH_MAX = 160;
/** Room name and description (CLI `rooms create`): the spec sets none; ours match an agent's name and description. */
export const ROOM_NAME_LENGTH_MAX = 80;
export const ROOM_DESCRIPTION_LENGTH_MAX = 500;
export const MESSAGE_CONTENT_LENGTH_MAX = 8000;
export const QUERY_TEXT_LENGTH_MAX = 200;
export const KNOWLEDGE_TITLE_LENGTH_MAX = 160;
export const KNOWLEDGE_CONTENT_LENGTH_MAX = 12000;
export const KNOWLEDGE_SOURCES_MAX = 10;
export const SOURCE_LENGTH_MAX = 1000;
export const WORK_TITLE_LENGTH_MAX = 160;
export const WORK_DESCRIPTION_LENGTH_MAX = 3000;
export const WORK_CRITERIA_LENGTH_MAX = 2000;
export const WORK_TAGS_MAX = 8;
export const WORK_TAG_LENGTH_MAX = 40;
export const WORK_RESULT_CONTENT_LENGTH_MAX = 6000;
export const WORK_RESULT_SOURCES_MAX = 5;
export const WORK_FEEDBACK_LENGTH_MAX = 2000;
/** Characters of a flag's note (issue 25; ours: room for a sentence or two and a pointer). */
export const FLAG_NOTE_LENGTH_MAX = 1000;
/** Characters of a moderation action's reason and a flag resolution's note (issue 25; ours). */
export const MODERATION_REASON_LENGTH_MAX = 500;
/** Characters of an admin action's reason: write stop, disable (issue 38; ours, as for moderation). */
export const ADMIN_REASON_LENGTH_MAX = 500;
/** Characters of flagged text shown with a flag to operators (issue 38 "moderation flags shows what was flagged"; ours). */
export const FLAG_EXCERPT_CHARS_MAX = 200;
/** A work snapshot's serialized size must fit in this many UTF-8 bytes (part 8). */
export const WORK_SNAPSHOT_BYTES_MAX = 22000;
export const LEASE_MINUTES_MIN = 5;
export const LEASE_MINUTES_MAX = 120;
export const LEASE_MINUTES_DEFAULT = 30;

// ---- Feeds and catalog (parts 2, 6, 8) ----
export const FEED_POLL_BACKLOG_SECONDS = 1;
export const FEED_POLL_CAUGHT_UP_SECONDS = 60;
/**
 * Long-polled feeds (issue 37): `wait` on /api/changes and /api/work/changes is 1..this many
 * seconds; a caught-up request is held until the feed has an event past its cursor or the wait ends.
 */
export const FEED_WAIT_SECONDS_MAX = 60;
/**
 * Held feed requests at once, per agent (ours; issue 37): both feeds from several processes or
 * reader tabs. One past it is answered at once, as without `wait`.
 */
export const FEED_WAITERS_PER_AGENT_MAX = 20;
/**
 * Held feed requests at once in total (ours; issue 37 "1,000 waiting requests from 50 agents"):
 * three quarters of CONNECTIONS_MAX, so held requests never take every connection and 1,000 of
 * them leave 512 connections for ordinary traffic. Each costs a small constant, at most
 * FEED_WAITER_RSS_BYTES_MAX of resident memory (its connection, request and response objects, its
 * request context, one set entry; no timer of its own). One past it is answered at once, as
 * without `wait`.
 */
export const FEED_WAITERS_MAX = 1536;
/**
 * The documented bound on the resident memory one held feed request costs the server, in bytes
 * (ours; issue 37 "memory that grows with waiters beyond a small constant each"). Measured with
 * test/http/long-poll.test.mjs (VmRSS before and after holding 1,000 requests from 50 agents):
 * about 14-18 KiB each for the first 1,000 on a fresh server (one-time costs included: code compiled,
 * heap grown) and about 0.5-3 KiB each for a later 1,000 (its connection, request and response
 * objects, its context, one set entry). The bound leaves about twice the first figure, so
 * FEED_WAITERS_MAX held requests stay within 48 MiB.
 */
export const FEED_WAITER_RSS_BYTES_MAX = 32 * 1024;
/** How often held feed requests are checked for their deadline, in ms (one timer for all; issue 37). */
export const FEED_WAIT_SWEEP_MS = 100;
/**
 * Change feeds as Server-Sent Events (issue 37 "optionally the same stream as Server-Sent
 * Events"): a stream asked for without `wait` stays open this many seconds (the long poll's
 * FEED_WAIT_SECONDS_MAX; ours), then ends and the client reconnects with Last-Event-ID.
 */
export const FEED_STREAM_WAIT_DEFAULT_SECONDS = 60;
/**
 * The delivery window, in ms (ours; issue 37 "answered within 100 ms of a commit"): held feed
 * requests are answered and streams written in delivery rounds, at most one per window. The first
 * group commit after a quiet period is delivered at once; the later ones within the window
 * together at its end, so at high write rates 1,000 followers cost one answer or stream write
 * each per window, not one per group commit. One timer for all. The window grows past this when
 * rounds are costly (FEED_DELIVERY_SHARE_PERCENT).
 */
export const FEED_STREAM_FLUSH_MS = 50;
/**
 * The share of the main thread's time that delivery rounds may take, by their own measure, in
 * percent (ours; issue 37 "writes unaffected"): after a round whose measured cost is C ms — its
 * own work (answers rendered, stream writes), the writing of each answer it released to its
 * socket, and the requests of followers not caught up that arrived during the window before it
 * (src/api/feeds/long-poll.ts `charge`) — its window is at least C · (100 − P) / P ms long, so
 * many followers get bigger pages less often instead of starving the writes. What can be timed
 * per request (from its handler on) is about half of what it costs the main thread (node:http
 * parses it first and sets up its request and response; its objects leave garbage): measured
 * (scripts/bench/push-bench.mjs, 2026-11-28, 64 write connections, four runs) 39-45 ms/s by the rounds
 * (forum_feed_delivery_seconds_total) against 55-96 ms/s of main-thread time above the same
 * writes without waiters for 1,000 long-poll followers of /api/changes, 30-36 against 45-152
 * ms/s for 1,000 /api/inbox long polls (that figure is noisy). So where the rule binds, the whole
 * cost can be about twice P. A share of 5 was tried: no write throughput gained beyond the runs'
 * noise, and the inbox's delivery p99 with 1,000 long polls rose (74-78 ms against 31-50 ms for
 * the tree before; 13 ms with 10; docs/performance/README.md#push).
 */
export const FEED_DELIVERY_SHARE_PERCENT = 10;
/**
 * A stream whose response holds more than this many bytes not yet taken by the client's socket
 * is not written to until it drains (ours; issue 37 "memory that does not grow with waiters"): it
 * keeps its cursor and catches up from it afterwards, so a reader that does not read costs at most
 * this plus one page.
 */
export const FEED_STREAM_BUFFER_BYTES_MAX = 64 * 1024;
/**
 * The `retry:` a stream sends first, in ms (ours): how long an EventSource waits before it
 * reconnects (with Last-Event-ID) once the stream ends at its wait.
 */
export const FEED_STREAM_RETRY_MS = 1000;
/**
 * A stream with nothing written for this many ms gets a `: keep-alive` comment line (ours), for
 * proxies that close quiet connections; sent by the held requests' one sweep timer.
 */
export const FEED_STREAM_KEEPALIVE_MS = 15_000;
/**
 * Retry-After, in seconds, of the 429 (the caller's FEED_WAITERS_PER_AGENT_MAX reached) or 503
 * (FEED_WAITERS_MAX reached) that refuses a stream past the bounds on held requests (ours).
 */
export const FEED_STREAM_BUSY_RETRY_SECONDS = 5;
export const CATALOG_ITEMS_MAX = 3;
/**
 * Feed pages whose whole window lies below the log head never change, so recently served ones are
 * kept as encoded bytes: at most this many pages (ours)...
 */
export const FEED_PAGE_CACHE_MAX = 64;
/**
 * ...and at most this many bytes for both feeds together (ours; issue 28 item 4;
 * FORUM_FEED_CACHE_MB overrides it, 0 = no cache). The count alone did not bound memory: a page
 * of 100 knowledge items of ~31 KB is ~3 MB, and 64 of them took the server from 103 to 303 MiB.
 * 16 MiB holds 64 pages of ~250 KB (short messages) or five pages of the largest kind.
 */
export const FEED_PAGE_CACHE_BYTES_DEFAULT = 16 * 1024 * 1024;
export const CATALOG_POLL_SECONDS = 300;

// ---- Rate limits (part 8) ----
export const WRITES_PER_TOKEN_PER_MINUTE = 30;
export const CHANGE_READS_PER_TOKEN_PER_MINUTE = 60;
export const REGISTRATIONS_PER_IP_PER_HOUR = 5;
export const PUBLIC_REQUESTS_PER_MINUTE = 600;
/**
 * Fair share (ours; issue 38): the most of PUBLIC_REQUESTS_PER_MINUTE that one client address
 * may take, in percent (FORUM_CLIENT_SHARE_PERCENT, 1..100; 100 = no per-client cap). At 25 %
 * one looping client takes at most 150 requests a minute and leaves 450 to everyone else.
 */
export const CLIENT_SHARE_PERCENT_DEFAULT = 25;

// ---- Store (ours) ----
/** A segment is closed and a new one started once it reaches this size. */
export const SEGMENT_BYTES_MAX = 64 * 1024 * 1024;
/**
 * A write past the active segment's end first extends the file by this many bytes of written
 * zeros (FORUM_SEGMENT_ZERO_AHEAD_KB; 0: the file grows with each write), so the fdatasyncs of
 * the appends after it need not commit a new file size (issue 56; segment.ts ActiveSegment).
 * One extension costs one slower fdatasync (its zeros reach the disk) per this many bytes
 * appended; the segment is cut back to its last record when it is closed (ours).
 */
export const SEGMENT_ZERO_AHEAD_BYTES = 4 * 1024 * 1024;
/** The zeros of an extension are written this many bytes at a time, from one shared buffer (ours). */
export const SEGMENT_ZERO_WRITE_BYTES = 1024 * 1024;
/**
 * A lone write (issue 56: one record, nothing else for the server to do; group-commit.ts isLoneWrite) calls
 * fdatasync on the main thread, saving the thread pool's two thread wake-ups (about 0.1 ms here),
 * only when the event loop waited at least this long (ms) for work since the last batch became
 * durable: longer than an epoll_wait that returns at once because requests are already waiting,
 * so a server under load never blocks its loop for a sync (ours).
 */
export const LONE_WRITE_IDLE_MS = 0.01;
/**
 * A lone write syncs on the main thread only while the last fdatasync took at most this long (µs;
 * FORUM_LONE_WRITE_SYNC_MAX_US, 0 turns lone writes off): on a slow or busy disk the event loop is
 * never blocked for a whole sync (ours).
 */
export const LONE_WRITE_SYNC_MAX_US_DEFAULT = 1_000;

// ---- Parallel whole replay (ours, issue 30; store/replay-worker.ts) ----
/** At most this many worker threads check segments during a whole replay (the main thread applies). */
export const REPLAY_WORKERS_MAX = 2;
/**
 * A whole replay uses worker threads only when the segments before the last hold at least this
 * many bytes: below it, starting a worker (tens of ms) costs more than checking them here.
 */
export const REPLAY_WORKERS_BYTES_MIN = 16 * 1024 * 1024;
/**
 * Segments a replay's workers may check ahead of the one being applied, beyond one per worker:
 * bounds the replay's extra memory to about (workers + this) × SEGMENT_BYTES_MAX.
 */
export const REPLAY_SEGMENTS_AHEAD = 1;
/**
 * Default size of the cache of records read back from the segment files (ours, issue 17;
 * FORUM_RECORD_CACHE_MB overrides it): message text lives on disk, and the most recently read
 * records are kept decoded up to this many bytes (UTF-16 estimate).
 */
export const RECORD_CACHE_BYTES_DEFAULT = 64 * 1024 * 1024;
/**
 * A start that replayed at least this many records writes a state snapshot before it serves, so
 * the next start (after a crash too) does not replay them again (ours, issue 17). Every clean
 * shutdown writes one as well.
 */
export const SNAPSHOT_AFTER_REPLAY_RECORDS_MIN = 10_000;
/** Most segment files held open at once for positional reads of records (ours, issue 17). */
export const SEGMENT_FDS_MAX = 64;
/**
 * A `q` search yields to the event loop after this much work in one go (ours, issues 17 and 21:
 * no request holds the event loop), so other requests are served between its slices.
 */
export const SEARCH_SLICE_MS = 4;
/**
 * A `q` search whose candidate positions (one topic's or one author's messages, a reply list)
 * number at most this many scans them instead of asking the n-gram index (ours, issue 17):
 * cheaper than the index lookups for a small set, and bounded.
 */
export const SEARCH_SCAN_CANDIDATES_MAX = 256;
/**
 * The topic-title search (ours, issue 55; an extension of part 4 GET /api/search) keeps the
 * lower-cased titles joined into one string per this many topics (domain/forum/topic-titles.ts):
 * one native substring search per chunk instead of one call per title, and a bounded amount of
 * work (a chunk of at most 160 characters a title) between two checks of the search's slice.
 */
export const TOPIC_TITLE_CHUNK = 4096;
/** Tokens carry this many random bytes (issue 2: at least 32). */
export const TOKEN_BYTES = 32;
/**
 * Named tokens an agent may hold besides its registration token (ours, issue 53 "several named
 * tokens per agent (bounded)"): a create beyond it answers 409 CREDENTIAL_LIMIT until one is revoked.
 * Small, because each is a bearer secret to keep track of, and the list is read whole.
 */
export const AGENT_TOKENS_MAX = 10;
/**
 * Signing keys an agent may register over its life (ours, issue 53 "agent signing keys"): its
 * whole key history, rotated and revoked keys included, since they verify what was signed with
 * them; one more answers 409 CREDENTIAL_LIMIT. One key is active at a time.
 */
export const AGENT_KEYS_MAX = 100;
// Device codes (ours, issue 55 "add another device"; docs/api/tokens.md#device-codes):
/** How long a code is good: enough to type 8 characters on another device, soon worthless if overseen. */
export const DEVICE_CODE_TTL_MS = 10 * 60 * 1000;
/** A code's characters: digits and capitals without the misread 0, 1, I, L, O (31); 8 of them ≈ 40 bits. */
export const DEVICE_CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
export const DEVICE_CODE_LENGTH = 8;
/** Codes an agent may make within DEVICE_CODE_TTL_MS, used or not; one more is 409 CREDENTIAL_LIMIT. */
export const DEVICE_CODES_MAX = 3;
/** scrypt N of a code's hash in the log (r 8, p 1: 4 MiB, ~10 ms): trying all 31^8 codes takes weeks, not minutes. */
export const DEVICE_CODE_SCRYPT_COST = 2 ** 12;
/** An agent counts as active in /api/status when seen within this window (ours). */
export const ACTIVE_AGENT_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * The least gap between the last record a writer saw and the first position a new writer gives
 * (ours; issue 50, domain/positions.ts): a server that takes the writer epoch from another writer
 * starts at the next multiple of this at least this far on, so an async leader's lost records
 * (fewer than this many) keep ids and feed positions no new record is given.
 */
export const POSITION_JUMP = 1_000_000_000;
/** Width of the zero-padded sequence in generated ids, so ids sort like their creation order (ours). */
export const ID_SEQ_DIGITS = 10;
/**
 * GET /api/status is rebuilt at most this often while nothing it reports changes (ours): it is
 * the most polled endpoint, and `activeAgents` would otherwise cost a pass over every agent.
 */
export const STATUS_CACHE_MS = 1000;
/** The room that exists from the first start (issue 2). */
export const DEFAULT_ROOM_ID = 'commons';

// ---- Knowledge (parts 2, 4 "Knowledge and search") ----
/** Knowledge categories; author claims, not fact checks (part 2). */
export const KNOWLEDGE_CATEGORIES = ['evidence', 'hypothesis', 'opinion', 'correction'] as const;
/** An `evidence` item must cite at least this many sources (part 4 POST /api/knowledge). */
export const KNOWLEDGE_EVIDENCE_SOURCES_MIN = 1;
/**
 * Every source starts with http:// or https://, case-insensitive (parts 2, 4). Spelled without
 * the `i` flag because JSON Schema patterns have no flags; schemas/KnowledgeInput.json uses it.
 */
export const SOURCE_URL_PATTERN = '^[hH][tT][tT][pP][sS]?://';

// ---- Limits and operator protections (parts 7, 8; issue 7) ----
/** Window of the per-minute limits: writes, change reads, public requests (part 8). */
export const RATE_WINDOW_MINUTE_MS = 60 * 1000;
/** Window of the registration limit (part 8: 5 per hour per IP). */
export const RATE_WINDOW_HOUR_MS = 60 * 60 * 1000;
/**
 * Most keys (tokens or IPs) one rate limiter remembers (ours). Idle keys are forgotten once their
 * window has passed; at this cap the least recently counted key is forgotten early. With the
 * global limit on, a per-minute limiter can only ever see PUBLIC_REQUESTS_PER_MINUTE live keys,
 * so the cap is a backstop, not a working bound.
 */
export const RATE_LIMIT_KEYS_MAX = 50_000;
/**
 * IPv6 clients are counted per network prefix of this many bits (ours): one host usually owns a
 * whole /64 and could otherwise take a fresh address for every registration.
 */
export const IPV6_RATE_PREFIX_BITS = 64;
/**
 * Free disk space under the data folder is re-measured at most this often (ours), unless the
 * estimate comes within DISK_RECHECK_MARGIN_BYTES of the floor.
 */
export const DISK_CHECK_INTERVAL_MS = 5 * 1000;
/**
 * Within this many bytes above FORUM_MIN_FREE_BYTES (plus the write's own estimate), free space
 * is re-measured before every write instead of every DISK_CHECK_INTERVAL_MS (ours; issue 21 case
 * 3): near the floor, what other writers (the search index, a snapshot, other programs) used
 * since the last measurement must not slip past the 507.
 */
export const DISK_RECHECK_MARGIN_BYTES = 64 * 1024 * 1024;
/**
 * Bytes a write adds to the log beyond its request body, at most: the record envelope (seq, time,
 * type, ids the server assigns) and the chained hash (ours; issue 21 case 3, the per-write estimate).
 */
export const RECORD_OVERHEAD_BYTES_MAX = 1024;
/** Retry-After sent with 503 while the service shuts down (ours: about one restart). */
export const SHUTDOWN_RETRY_AFTER_SECONDS = 5;

// ---- Work board and catalog (parts 2, 3, 4 "Work", 8) ----
/** Ms per lease minute. */
export const MS_PER_MINUTE = 60_000;
/** Format identifier of GET /api/opportunities (part 9). */
export const CATALOG_FORMAT = 'forum-opportunities-v1';
/** Format identifier of GET /api/opportunities/brief (ours). */
export const CATALOG_BRIEF_FORMAT = 'forum-opportunity-brief-v1';
/** Cache-Control of the public catalog: matches the poll delay (part 8). */
export const CATALOG_CACHE_CONTROL = `public, max-age=${CATALOG_POLL_SECONDS}`;

// ---- Guidance and docs (part 1 "Static guidance paths", part 9; issue 6) ----
/** `Cache-Control: public, max-age=…` of /openapi.json, /api/docs and the guides (ours). */
export const DOCS_CACHE_MAX_AGE_SECONDS = 300;
/** Version of the contract description served at /openapi.json (part 9). */
export const OPENAPI_VERSION = '3.1.1';
/** Placeholder in guides and client helpers replaced by FORUM_PUBLIC_URL when served (ours). */
export const BASE_URL_PLACEHOLDER = '{{BASE_URL}}';

// ---- A2A binding (parts 1, 4 "A2A binding", 9; A2A 1.0.1 HTTP+JSON) ----
/** The A2A protocol version of the binding (part 9); requests may name any 1.0.x patch. */
export const A2A_PROTOCOL_VERSION = '1.0';
/**
 * The A2A media type (A2A 1.0.1 §11.1: it SHOULD be used for HTTP+JSON requests and responses;
 * IANA-registered). Accepted on requests beside application/json, and answered when the client
 * prefers it (src/api/a2a/media.ts).
 */
export const A2A_MEDIA_TYPE = 'application/a2a+json';
/** Header, or query parameter, in which clients name their A2A version (A2A 1.0 §3.2.6). */
export const A2A_VERSION_HEADER = 'A2A-Version';
/** The binding's name in the agent card's supportedInterfaces (A2A 1.0 §5). */
export const A2A_PROTOCOL_BINDING = 'HTTP+JSON';
/** Path prefix of the binding; the card's interface URL is FORUM_PUBLIC_URL + this (part 4). */
export const A2A_BASE_PATH = '/a2a';
/** Longest accepted A2A messageId and contextId; a messageId may become a clientId (part 2 Id; ours). */
export const A2A_ID_LENGTH_MAX = ID_LENGTH_MAX;

/** Default and largest pageSize of A2A ListTasks (A2A 1.0.1 §3.1.4: page size 1..100, default 50). */
export const A2A_LIST_TASKS_PAGE_SIZE_DEFAULT = 50;
export const A2A_LIST_TASKS_PAGE_SIZE_MAX = 100;
/** ErrorInfo domain of the errors A2A itself defines (TaskNotFound, ...) (A2A 1.0 §10.6). */
export const A2A_ERROR_DOMAIN = 'a2a-protocol.org';
/** How long clients and proxies may cache the agent card (ours). */
export const AGENT_CARD_MAX_AGE_SECONDS = 300;

// ---- MCP over Streamable HTTP (issue 26; MCP 2025-06-18 and 2025-11-25 "Transports") ----
/** Path of the MCP endpoint on the public listener (docs/api/mcp.md). */
export const MCP_PATH = '/mcp';
/**
 * The MCP protocol revisions POST /mcp serves: those the pinned @modelcontextprotocol/sdk 1.32.2
 * negotiates (its SUPPORTED_PROTOCOL_VERSIONS; the stateless 2026-07-28 revision is not in it).
 * Listed in the agent card and docs/api/mcp.md; test/http/mcp-http.test.mjs checks it equals the SDK's list.
 */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'] as const;
/**
 * The stateless MCP revisions POST /mcp serves beside MCP_PROTOCOL_VERSIONS (issue 54), on the
 * pinned @modelcontextprotocol/server 2.4.0 (src/mcp/modern.ts; test/http/mcp-modern.test.mjs
 * checks it equals what server/discover answers).
 */
export const MCP_MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;
/**
 * How long an MCP 2026-07-28 client may reuse server/discover, tools/list, resources/list and
 * resources/read (`ttlMs`; MCP 2026-07-28 "Caching"; ours): each is fixed for a process's
 * lifetime, so this bounds how long a client keeps an old tool list after a deploy.
 */
export const MCP_CACHE_TTL_MS = 5 * 60 * 1000;
/**
 * How long one MCP 2026-07-28 `subscriptions/listen` stream on /mcp stays open, in seconds (ours;
 * issue 54): then it ends gracefully (the empty listen result) and the client listens again, as a
 * feed stream ends at its wait (FEED_STREAM_WAIT_DEFAULT_SECONDS). Longer than a feed stream's
 * minute because a listen carries no cursor to resume from: the client rereads its feeds after a
 * new listen, so fewer reopenings mean fewer rereads; short enough that a slot held by a client
 * that vanished without closing its connection is reclaimed within minutes.
 */
export const MCP_LISTEN_SECONDS = 5 * 60;
/** Headers a host may send instead of the query parameters readOnly and toolsets (GitHub's MCP server names; issue 26). */
export const MCP_READONLY_HEADER = 'X-MCP-Readonly';
export const MCP_TOOLSETS_HEADER = 'X-MCP-Toolsets';
/**
 * Largest HTTP body POST /mcp reads (ours; issue 34): twice BODY_BYTES_MAX, so a JSON-RPC envelope
 * around tool arguments of up to BODY_BYTES_MAX still reaches the tool layer, which then refuses
 * oversize arguments with the same tool error the stdio server gives (HTTP 413 of the REST route,
 * [BODY_TOO_LARGE]). A body over this is refused by the transport with HTTP 413.
 */
export const MCP_BODY_BYTES_MAX = 2 * BODY_BYTES_MAX;
/**
 * Largest POST /mcp body streamed past, never held, to answer a `tools/call` over
 * MCP_BODY_BYTES_MAX with a tool error naming its oversize argument (ours; issue 51: an HTTP 413
 * is a transport exception to MCP clients, so the model never read "shorten that field"). Only
 * the JSON-RPC id, method, tool name and each argument's size are kept while it streams past; a
 * body over this, or any other method over MCP_BODY_BYTES_MAX, is still refused with HTTP 413.
 */
export const MCP_OVERSIZE_BODY_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Deepest nesting of arrays and objects a tool's arguments may have (ours; issue 34): no tool
 * input schema nests deeper than 3, and a deeper value is refused with -32602 Invalid params
 * before anything walks it recursively.
 */
export const MCP_ARGUMENT_DEPTH_MAX = 16;
/**
 * Largest tool result, in bytes of its JSON (structuredContent), that either MCP transport
 * returns (ours; issue 34). A larger result is a tool error asking for a smaller page (limit), so
 * one answer is bounded before its text copy and its JSON-RPC envelope are built.
 */
export const MCP_RESULT_BYTES_MAX = 1024 * 1024;
/**
 * Bound on the bytes of one /mcp answer (ours; issue 34): the result JSON, its copy as a text
 * block (escaping at most doubles it) and 16 KiB for the summary and the envelope. Resources and
 * tools/list are far below it; an answer over it is replaced by a JSON-RPC error.
 */
export const MCP_ANSWER_BYTES_MAX = 3 * MCP_RESULT_BYTES_MAX + 16 * 1024;
/**
 * Largest forum answer, in bytes of its (decoded) body, that the stdio MCP server reads (ours;
 * issue 51 defect 5). Applied while the body streams in (src/mcp/bounded-fetch.ts): past it the
 * request is aborted and the call is a tool error naming this bound. Four tool results' worth:
 * any REST page the tool layer could still refuse with a useful smaller `limit`, and every
 * resource (the OpenAPI document, the guides: well under 1 MiB), fit below it.
 */
export const MCP_STDIO_ANSWER_BYTES_MAX = 4 * MCP_RESULT_BYTES_MAX;
/**
 * /mcp requests handled at once (ours; issue 34): a request holds its slot from the moment its
 * body is read until its answer has been handed to the socket, so at most this many answers of
 * MCP_ANSWER_BYTES_MAX are built or buffered at any time. Further requests wait in a queue.
 */
export const MCP_IN_FLIGHT_MAX = 4;
/**
 * Of MCP_IN_FLIGHT_MAX, the slots one agent may hold at once (ours; issue 34): an agent that stops
 * reading its answers holds at most this many, and the other slots keep serving everyone else.
 */
export const MCP_IN_FLIGHT_PER_AGENT_MAX = 2;
/** /mcp requests that may wait for a slot (ours; issue 34); one more is refused with 503 and Retry-After. */
export const MCP_QUEUE_MAX = 64;
/** Of MCP_QUEUE_MAX, the waiting requests of one agent (ours; issue 34): one agent cannot fill the queue. */
export const MCP_QUEUE_PER_AGENT_MAX = 8;
/** Retry-After of that 503, in seconds. */
export const MCP_BUSY_RETRY_AFTER_SECONDS = 1;
/**
 * The documented bound on how much /mcp may grow the server's resident memory, whatever its
 * callers send (ours; issue 34; docs/api/mcp.md): MCP_IN_FLIGHT_MAX answers, each with its
 * result object, JSON, text copy and socket buffer (about 8 × MCP_RESULT_BYTES_MAX), plus
 * MCP_QUEUE_MAX waiting bodies of MCP_BODY_BYTES_MAX parsed — about 50 MiB — and the garbage of
 * the answers already sent that V8 has not collected yet, which dominates: measured 75-130 MiB of
 * growth under the probe, so the bound is twice the highest measurement.
 * test/http/mcp-memory.test.mjs floods /mcp and checks the RSS stays within it.
 */
export const MCP_RSS_GROWTH_BYTES_MAX = 256 * 1024 * 1024;

// HTTP server limits
/** Default FORUM_MIN_FREE_BYTES: writes answer 507 below 256 MiB free under the data folder (ours; part 7 507, issue 7). */
export const MIN_FREE_BYTES_DEFAULT = 256 * 1024 * 1024;
/**
 * Server timeouts against slow or idle clients, in ms (ours; issue 8 "slow-loris connections").
 * headersTimeoutMs: the whole request head must arrive within this; requestTimeoutMs: the whole
 * request, head and body (a request not complete by then gets 408); keepAliveTimeoutMs: idle
 * kept-alive connections are closed after this; checkIntervalMs: how often the two request
 * timeouts are checked (Node's default is 30 s) and idle sockets are swept for; socketIdleTimeoutMs:
 * a socket with no bytes in either direction for this long is closed (idle-connection floods,
 * clients that stop reading), within checkIntervalMs after the deadline.
 */
export const SERVER_TIMEOUTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
  socketIdleTimeoutMs: 30_000,
} as const;
/**
 * Connections the public listener holds open at once; further ones are closed as they arrive
 * (ours; issue 8 "many idle connections"). Idle sockets also time out (SERVER_TIMEOUTS), but a
 * flood inside that window must not use up the file descriptors the log needs to roll over a
 * segment. Well above what the global limit of 600 requests a minute needs; 2048 (was 1024) so
 * that 1,000 held long-poll requests (issue 37) fit under FEED_WAITERS_MAX with room for ordinary
 * traffic. Each connection is one file descriptor: the process needs a RLIMIT_NOFILE above this
 * plus the log's and indexes' files (Node raises the soft limit to the hard one at start; the
 * systemd unit in docs/operate/production.md sets LimitNOFILE=65536).
 */
export const CONNECTIONS_MAX = 2048;
/**
 * Default cap on connections one peer address holds open at once (ours; issue 21 "connection
 * flood"; FORUM_CONNECTIONS_PER_ADDRESS, 0 = no cap): a quarter of CONNECTIONS_MAX, so one client
 * cannot take the listener from everyone else. The address is the TCP peer: behind a proxy or
 * tunnel every client shares the proxy's address, and the operator raises or disables the cap.
 * It also bounds one host's held long-poll requests: 25 agents at FEED_WAITERS_PER_AGENT_MAX each.
 */
export const CONNECTIONS_PER_ADDRESS_DEFAULT = 512;
/**
 * A client's `X-Request-Id` is kept when it is 1..REQUEST_ID_LENGTH_MAX characters of
 * `A-Z a-z 0-9 . _ : -` (ours; issue 20); otherwise the server makes one (a UUID). It is echoed on
 * every response, logged with every line about the request and put in 5xx bodies.
 */
export const REQUEST_ID_LENGTH_MAX = 128;
/** The metrics listener (FORUM_METRICS_PORT) binds here only: loopback, never the public address (ours; issue 20). */
export const METRICS_HOST = '127.0.0.1';
/** How long a browser may cache a CORS preflight answer (ours; docs/api/conventions.md#choices-where-the-specification-says-not-shown). */
export const CORS_MAX_AGE_SECONDS = 600;
/** Largest accepted request head (request line and headers), in bytes; larger gets 431 (ours; issue 8 "header floods"). */
export const HEADER_BYTES_MAX = 16 * 1024;
/**
 * After refusing a body with 413 the server reads and discards the rest of it, up to this many
 * bytes, before it answers and closes (ours; issue 28 item 5): a client still sending when the
 * connection closes gets EPIPE or a reset instead of the 413. Covers what clients send by mistake
 * (a few MiB); a larger declared Content-Length, or more bytes, is refused at once and the
 * connection closed.
 */
export const BODY_DRAIN_BYTES_MAX = 8 * 1024 * 1024;
/** ...and for at most this long, in ms, so a stalled sender cannot hold the answer (ours; issue 28 item 5). */
export const BODY_DRAIN_MS = 5_000;

// Search index (src/store/search; issue 17 "Search that does not scan")
/** Documents per immutable n-gram index shard; the live (in-memory) shard seals at this count (ours; docs/internals/search-index.md). */
export const NGRAM_SHARD_DOCS_MAX = 32768;
/** Dictionary entries per block of a shard file; one block is read per gram lookup and one key per block is kept in memory (ours). */
export const NGRAM_DICT_BLOCK_ENTRIES = 64;
/**
 * Version of the shard file format; a file of another version is dropped and rebuilt from the log
 * (ours). 2: the file ends in an HMAC-SHA-256 of everything before it (issue 28); version 1 files
 * carry no MAC and are rebuilt once. 3 (issue 30): postings before the dictionary (a merge writes
 * them as a stream) and a Bloom filter over the file's grams; version 2 files are still read.
 */
export const NGRAM_FORMAT_VERSION = 3;
/**
 * Trigrams of a query looked up per shard file: the rarest (estimated from the live shard or the
 * newest shard file). Any subset of a query's trigrams gives a superset of its matches, which the
 * caller verifies; fewer lookups bound the reads per shard for long queries (ours).
 */
export const NGRAM_QUERY_TRIGRAMS_MAX = 4;
/** Live-shard documents below which query planning estimates gram rarity from the newest shard file instead (ours). */
export const NGRAM_ESTIMATE_DOCS_MIN = 1024;
/** Longest run, in ms, of sealing a shard file's encoding before it yields to the event loop (ours). */
export const NGRAM_SEAL_SLICE_MS = 5;
// Search shard merging (src/store/search/merge*.ts; issue 30 "Search segments that merge")
/**
 * Adjacent shard files of one size tier merged at a time, and the ratio between tiers: files of
 * shardDocs · F^t to shardDocs · F^(t+1) documents form tier t, and F of them in a row are merged
 * into one of tier t + 1, so at most F − 1 files stay per tier (ours; FORUM_SEARCH_MERGE_FACTOR).
 */
export const NGRAM_MERGE_FACTOR = 8;
/**
 * Most documents a merged shard file may hold; files this large are not merged further. Keeps
 * every file well below the format's 4 GiB offsets (about 225–500 bytes a document) and a merge's
 * I/O bounded (ours).
 */
export const NGRAM_MERGE_DOCS_MAX = 2 ** 21;
/** Bloom filter bits per gram of a shard file (format 3): about 1 % false positives with NGRAM_BLOOM_HASHES probes (ours). */
export const NGRAM_BLOOM_BITS_PER_KEY = 10;
/** Bit probes per gram in a shard file's Bloom filter (ours; ≈ bits per key · ln 2). */
export const NGRAM_BLOOM_HASHES = 7;
/** Bytes a merge worker buffers before each write of the merged file's postings (ours). */
export const NGRAM_MERGE_WRITE_BYTES = 1024 * 1024;

/**
 * The full garbage collection after loading (src/memory.ts; ours, issue 17) is logged when it
 * takes at least this many ms — large archives — so small test and demo servers stay quiet.
 */
export const START_GC_LOG_MS = 100;

// Derived files and scrub (issue 28 "Derived files are authenticated and checked whole", "Background scrub")
/** Bytes of the random key (data/index/derived.key) whose HMAC-SHA-256 authenticates derived files (ours; docs/internals/storage.md#derived-file-key). */
export const DERIVED_KEY_BYTES = 32;
/** Longest header line a state snapshot may have, in bytes: its segment stamps grow with the segments (ours; store/snapshot.ts). */
export const SNAPSHOT_HEADER_BYTES_MAX = 16 * 1024 * 1024;
/** Bytes read per step when a shard file's HMAC is checked at open (ours; store/search/shard.ts). */
export const SHARD_MAC_READ_BYTES = 1024 * 1024;
/** Default pace of the background scrub of sealed segments, MB per minute; 0 turns it off (ours; FORUM_SCRUB_MB_PER_MINUTE). */
export const SCRUB_MB_PER_MINUTE_DEFAULT = 256;
/**
 * Default wait after a start before the scrub's first pass, seconds (FORUM_SCRUB_START_DELAY_S):
 * it never competes with the start's own work (replay, search-index catch-up) (ours).
 */
export const SCRUB_START_DELAY_S_DEFAULT = 60;
/** Pause between two scrub passes, ms: a pass that finishes early waits this long before the next (ours; docs/internals/storage.md#scrub). */
export const SCRUB_PASS_INTERVAL_MS = 60 * 60 * 1000;
/** Time the scrub worker sleeps at least when it is ahead of its pace, ms (ours). */
export const SCRUB_SLEEP_MS_MIN = 10;
/** Damage findings kept in memory for /api/status and logs; later ones are only counted (ours; src/integrity.ts). */
export const INTEGRITY_FINDINGS_MAX = 100;

// Search index build workers (issue 30: "build the search index in workers too")
/**
 * Worker threads that build the search index's shard files when a start finds more than a shard's
 * worth of documents missing (FORUM_SEARCH_BUILD_WORKERS; 0 builds on the main thread in slices).
 * Two: one per core of the target machine; the main thread mostly waits meanwhile (ours; docs/internals/search-index.md).
 */
export const SEARCH_BUILD_WORKERS_DEFAULT = 2;

// Replication to S3-compatible object storage (issue 35; docs/operate/replication.md)
/** Default acknowledgement mode with a replica (FORUM_REPLICA_MODE): `async` acknowledges after the local fdatasync (ours). */
export const REPLICA_MODE_DEFAULT = 'async';
/**
 * In `async` mode the leader gathers durable records this long before it ships them as one chunk,
 * ms: at most 1000 / this PUTs per second under load, none when idle; the shipping lag stays
 * under the 1 s (RPO ≤ 1 s) (ours; FORUM_REPLICA_SHIP_MS).
 */
export const REPLICA_SHIP_INTERVAL_MS = 200;
/**
 * Once the bucket holds at least this many chunks after its last sealed segment, the leader seals
 * its active segment (the next batch starts a new one) and compacts it into one segment object,
 * instead of waiting for SEGMENT_BYTES_MAX (ours; issue 50): small records rarely fill a 64 MiB
 * segment, and a fresh follower, a restore and a promotion's take-back read every chunk (on Ceph
 * RGW at load ~10, about 10 ms a chunk 16 at a time, 50 ms one at a time), so the bucket must
 * never hold thousands of them.
 */
export const REPLICA_SEAL_CHUNKS = 500;
/**
 * A leader seals a segment for REPLICA_SEAL_CHUNKS at most this often, ms (ours; issue 50): under
 * heavy load the chunk count is reached in seconds, and each seal is a segment file on disk and
 * an entry in the manifest; at most one a minute is about the rate at which a forum writing
 * 1 MB/s fills SEGMENT_BYTES_MAX segments anyway.
 */
export const REPLICA_SEAL_MIN_INTERVAL_MS = 60_000;
/** A chunk holds at most about this many bytes of log lines (ours): a PUT stays small, a restore reads few objects. */
export const REPLICA_CHUNK_BYTES_MAX = 8 * 1024 * 1024;
/**
 * In `sync` mode a write waits at most this long for the bucket to confirm it, ms, then gets 503
 * REPLICA_UNAVAILABLE (not acknowledged; it may still be committed: retry with the same clientId)
 * (ours; FORUM_REPLICA_ACK_TIMEOUT_MS).
 */
export const REPLICA_ACK_TIMEOUT_MS = 10_000;
/** One object-store request gives up after this long, ms (ours; the SDK's requestTimeout). */
export const REPLICA_REQUEST_TIMEOUT_MS = 5_000;
/** Connecting to the object store gives up after this long, ms (ours; the SDK's connectionTimeout). */
export const REPLICA_CONNECT_TIMEOUT_MS = 2_000;
/** After a failed shipment the leader retries after this long, doubling up to REPLICA_RETRY_MAX_MS (ours). */
export const REPLICA_RETRY_MIN_MS = 250;
/**
 * Longest pause between two attempts of the leader's loop (shipping, and taking the epoch at a
 * start) while the object store fails, ms (ours; issue 50): the store answering again is seen
 * within about this long, so an async backlog ships and a starting leader takes writes soon after
 * a fault ends. The long fault run (seed 20261210) found 5 s too long: store faults 2-5 s apart
 * kept an async leader from shipping for 19 s before a take-over, and a starting leader from taking
 * writes for 13 s. At most one request a second per leader during an outage.
 */
export const REPLICA_RETRY_MAX_MS = 1_000;
/**
 * A sync-mode write waiting for the bucket is retried at least this often, ms, whatever the
 * backoff (ours; issue 50): the store answering again is seen well within the ack timeout.
 */
export const REPLICA_SYNC_RETRY_MAX_MS = 1_000;
/**
 * A leader reads the manifest this often, ms, and fences itself when another server took the
 * epoch (ours; issue 50): a takeover waits at most about this long for the previous leader to
 * stop writing chunks.
 */
export const REPLICA_EPOCH_CHECK_MS = 1_000;
/**
 * A start writes the manifest with the next epoch at most this many times when the previous
 * leader keeps rewriting its own manifest meanwhile (head watermark, compaction; ours; issue 50).
 */
export const REPLICA_TAKE_EPOCH_ATTEMPTS = 5;
/**
 * A start or promotion that took the epoch gives up placing its fence record after this long,
 * ms, if the previous leader keeps writing (ours; issue 50); normally it takes one PUT.
 */
export const REPLICA_TAKEOVER_MAX_MS = 30_000;
/** Retry-After, seconds, of a 503 REPLICA_UNAVAILABLE or REPLICA_FENCED (ours). */
export const REPLICA_RETRY_AFTER_SECONDS = 5;
/**
 * The leader raises the bucket's signed head watermark (manifest `head`; issue 50) at most this
 * often while the head moves, ms, besides every manifest write it makes anyway (epoch, compaction,
 * erasure, a clean stop): one manifest PUT per interval under load, none when idle, never on the
 * write path. Records newer than the watermark can be deleted from the bucket undetected by
 * readers (ours).
 */
export const REPLICA_WATERMARK_INTERVAL_MS = 30_000;

// Read-only followers (issue 36; docs/operate/replication.md#followers)
/** A follower asks the bucket for the chunk after its head this often, ms (ours; FORUM_FOLLOW_POLL_MS): about 5 GETs per second per idle follower. */
export const FOLLOW_POLL_MS = 200;
/**
 * After this many polls in a row without the next chunk, a follower reads the manifest and the
 * chunk list once to find the object that holds its next record (compacted, or its head is not
 * on a chunk boundary) (ours).
 */
export const FOLLOW_RESYNC_AFTER_MISSES = 10;
/** The resync interval doubles while the bucket has nothing new, up to this many polls (60 s at FOLLOW_POLL_MS; ours). */
export const FOLLOW_RESYNC_AFTER_MISSES_MAX = 300;
/** A follower reads at most this many bytes ahead for the erase record of a tombstone it meets (ours). */
export const FOLLOW_LOOKAHEAD_BYTES_MAX = 64 * 1024 * 1024;
/**
 * Taking back a run of chunks (a leader's start, a promotion; issue 50): the chunk keys one LIST
 * shows after the local head are fetched this many at a time ahead of the one being applied (ours;
 * one GET at a time made a promotion over a 400-chunk lag take 20 s).
 */
export const FOLLOW_PREFETCH_MAX = 16;
/**
 * Restoring from a bucket (`restore --from`, a follower's start on an empty folder, `replication
 * lost`; issue 50): the chunks after the last sealed segment are fetched this many at a time ahead
 * of the one being proven and written (ours; one GET at a time, a follower's start over 5,000
 * chunks on Ceph RGW took minutes, and a promotion sent to it waited for that).
 */
export const RESTORE_PREFETCH_MAX = 16;
/**
 * Restoring from a bucket: sealed segment objects are fetched ahead too (RESTORE_PREFETCH_MAX at
 * a time), but at most this many of their bytes (the manifest lists each one's size) beyond the
 * one being proven (ours; issue 50: a leader seals small segments for its chunk count).
 */
export const RESTORE_PREFETCH_BYTES_MAX = 64 * 1024 * 1024;
/**
 * A follower's start on an empty folder restores from the bucket; when a compaction or an erasure
 * changes the bucket under it (nothing in the folder changed), it tries again, this many times in
 * all (ours; issue 50: a leader compacts every REPLICA_SEAL_CHUNKS chunks, so a restore can meet one).
 */
export const FOLLOW_RESTORE_ATTEMPTS = 3;
/**
 * After this many polls in a row that each found the next chunk, a tailing follower is behind: it
 * lists the chunks after its head once and fetches them ahead as a take-back does (ours).
 */
export const FOLLOW_CATCH_UP_AFTER_STEPS = 3;
/** Taking back a run of chunks: fetched chunks are appended together, one fdatasync per this many bytes at most (ours). */
export const FOLLOW_APPLY_BATCH_BYTES_MAX = 4 * 1024 * 1024;

// Replication settings' ranges and split-brain guard (issue 50; docs/operate/configuration.md, docs/operate/replication.md)
/** FORUM_REPLICA_SHIP_MS must lie in this range, ms (ours): below it a leader PUTs a chunk per write; above a minute the async loss bound means little. */
export const REPLICA_SHIP_MS_RANGE = { min: 10, max: 60_000 } as const;
/** FORUM_REPLICA_ACK_TIMEOUT_MS must lie in this range, ms (ours): below it a healthy store's PUT times out; above ten minutes a sync write has no useful bound (setTimeout's limit is ~24.8 days). */
export const REPLICA_ACK_TIMEOUT_MS_RANGE = { min: 100, max: 600_000 } as const;
/** FORUM_FOLLOW_POLL_MS must lie in this range, ms (ours): below it an idle follower sends 100+ GETs a second; above a minute it lags for minutes. */
export const FOLLOW_POLL_MS_RANGE = { min: 10, max: 60_000 } as const;
/**
 * A leader checks the bucket (one LIST of segments/ and one of chunks/: every listed segment and
 * every shipped chunk present) this often, ms, and puts back what is missing from its own log
 * (ours; issue 50; FORUM_REPLICA_CHECK_MS, within REPLICA_BUCKET_CHECK_MS_RANGE).
 */
export const REPLICA_BUCKET_CHECK_MS = 60_000;
/** FORUM_REPLICA_CHECK_MS must lie in this range, ms (ours): a second at most once, an hour at least once. */
export const REPLICA_BUCKET_CHECK_MS_RANGE = { min: 1_000, max: 3_600_000 } as const;
/** The file in the data folder that records the bucket this folder replicates to or follows, or its detachment (ours; src/store/replica/marker.ts). */
export const REPLICATION_MARKER_FILE = 'replication.json';

// Signed checkpoints and proofs (issue 53; docs/api/checkpoints.md)
/** Leaves per chunk of the Merkle tree (ours; store/merkle-tree.ts): RAM holds 64 / TREE_CHUNK_LEAVES bytes a record, a small subtree reads one chunk (8 KiB). A power of two. */
export const TREE_CHUNK_LEAVES = 256;
/** Hashed nodes of small subtrees the Merkle tree keeps for proofs (ours; store/merkle-tree.ts): about 100 bytes each, 1.6 MiB at most. */
export const SUBTREE_CACHE_MAX = 16_384;
/** The tree reads at most this many bytes of log per step while it catches up, then yields (ours). */
export const TREE_READ_BYTES = 1024 * 1024;
/** Records the tree takes per step from the hashes the log hands it after a group commit (ours; store/merkle-tree.ts `feed`): about 2 SHA-256 each, a few ms a step. */
export const TREE_LIVE_STEP = 4096;
/** Fed hashes the tree queues while it reads the log back (the rebuild at start), ours: past it the queue is dropped and those records are read from the log (about 100 bytes each, 6.5 MiB at most). */
export const TREE_LIVE_MAX = 65_536;
/** A new checkpoint is signed once the tree has grown by this many records since the latest (ours; docs/api/checkpoints.md "Cadence"). */
export const CHECKPOINT_INTERVAL_RECORDS = 1000;
/** ... or once the latest is this old and the tree has grown since, ms (ours; docs/api/checkpoints.md "Cadence"). */
export const CHECKPOINT_INTERVAL_MS = 10_000;
/** How long a proof or export request waits for the tree to reach the records it needs, ms (ours): then 503. */
export const TREE_WAIT_MS = 5_000;
/** The checkpoint signing key's file in the data folder (ours; src/tlog/checkpoints.ts). */
export const CHECKPOINT_KEY_FILE = 'checkpoint-key.pem';
/** Checkpoints signed at sizes other than the latest (exports, consistency proofs) kept for reuse (ours). */
export const CHECKPOINT_CACHE_MAX = 64;
