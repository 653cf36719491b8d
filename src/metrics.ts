/**
 * Operator metrics in the Prometheus text format (issue 20 "Metrics"), through prom-client, on a
 * listener of their own: `GET /metrics` on 127.0.0.1:FORUM_METRICS_PORT (off unless set), never
 * on the public port. Figures:
 *
 * - `forum_http_requests_total{method,route,status}` and
 *   `forum_http_request_duration_seconds{method,route}` (route = the route's pattern, `unmatched`
 *   for unknown paths);
 * - `forum_rate_limited_total{limit}` — 429s per limit (`public`, `registration`, `write`,
 *   `changeRead`) — and `forum_rate_limiter_evictions_total{limit}`;
 * - `forum_group_commit_fsync_seconds`, `forum_group_commit_records` and
 *   `forum_group_commit_bytes` — one observation per group commit (fdatasync);
 *   `forum_group_commit_lone_total` — those whose fdatasync ran on the main thread (a lone write,
 *   issue 56; read when scraped);
 * - `forum_log_head_seq`, `forum_log_durable_seq`, `forum_log_bytes`, `forum_disk_free_bytes`
 *   (read when scraped);
 * - `forum_scrub_bytes_total`, `forum_scrub_passes_total` and `forum_archive_damage_found_total`
 *   — the background scrub's progress and the damaged places found (issue 28; read when scraped);
 * - `forum_feed_waiters` — long-polled feed and inbox requests held now and feed and inbox
 *   streams (Server-Sent Events) open now (issue 37; read when scraped);
 * - `forum_feed_stream_queued_bytes_max` — the most bytes one open stream holds queued for a
 *   client that has not taken them (issue 51; read when scraped);
 * - `forum_feed_delivery_seconds_total` — the main-thread time the delivery rounds of held
 *   requests and streams measured for themselves, what their windows are sized by
 *   (FEED_DELIVERY_SHARE_PERCENT; issue 37; read when scraped);
 * - prom-client's default process metrics (`process_*`, `nodejs_*`: CPU, memory, event-loop lag,
 *   GC).
 *
 * When metrics are off nothing is created and the request path does no metric work.
 */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the scrape-time gauges read. */
export interface MetricsSources {
  headSeq(): number;
  durableSeq(): number;
  logBytes(): number;
  /** Free bytes under the data folder as last measured, or null when unknown. */
  diskFreeBytes(): number | null;
  /** Group commits whose fdatasync ran on the main thread (lone writes, issue 56) since start; absent = not reported. */
  loneFsyncs?(): number;
  /** Rate-limiter evictions so far, by limit name. */
  evictions(): Record<string, number>;
  /** The background scrub's counters (store/scrub.ts); absent = not reported. */
  scrub?(): { bytes: number; passes: number; damage: number };
  /** Replication (issue 35): shipping lag and object-store requests; absent = replication off. */
  replication?(): ReplicationSample;
  /** Held feed requests and their delivery rounds (issue 37); absent = not reported. */
  feeds?(): FeedSample;
}

/**
 * What the feed gauges read (issue 37): long-polled feed and inbox requests and streams held now,
 * and the delivery rounds' measured main-thread time since the start, in seconds.
 */
export interface FeedSample {
  waiters: number;
  deliverySeconds: number;
  /** The most bytes one open stream holds queued for its connection now (issue 51). */
  streamQueuedBytesMax: number;
}

/** What the replication gauges read (issue 35). */
export interface ReplicationSample {
  lagRecords: number;
  lagSeconds: number;
  shippedSeq: number;
  epoch: number;
  fenced: boolean;
  requests: Record<string, number>;
  /** Objects the leader's last bucket check found missing (issue 50). */
  missingObjects: number;
}

/** The service's metrics registry and the hooks that feed it. */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly durations: Histogram<'method' | 'route'>;
  private readonly limited: Counter<'limit'>;
  private readonly fsyncSeconds: Histogram;
  private readonly batchRecords: Histogram;
  private readonly batchBytes: Histogram;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({ name: 'forum_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status.', labelNames: ['method', 'route', 'status'], registers });
    this.durations = new Histogram({
      name: 'forum_http_request_duration_seconds',
      help: 'Time from request to response sent, by method and route pattern (seconds).',
      labelNames: ['method', 'route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.limited = new Counter({ name: 'forum_rate_limited_total', help: 'Requests refused with 429, by limit.', labelNames: ['limit'], registers });
    this.fsyncSeconds = new Histogram({
      name: 'forum_group_commit_fsync_seconds',
      help: 'fdatasync latency of one group commit (seconds).',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.batchRecords = new Histogram({ name: 'forum_group_commit_records', help: 'Records made durable by one group commit.', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], registers });
    this.batchBytes = new Histogram({ name: 'forum_group_commit_bytes', help: 'Bytes written by one group commit.', buckets: [512, 2048, 8192, 32768, 131072, 524288, 2097152], registers });
    if (sources.loneFsyncs !== undefined) {
      const loneFsyncs = sources.loneFsyncs;
      new Gauge({ name: 'forum_group_commit_lone_total', help: 'Group commits of one lone write whose fdatasync ran on the main thread (issue 56).', registers, collect() { this.set(loneFsyncs()); } });
    }
    new Gauge({ name: 'forum_log_head_seq', help: 'Seq of the last record appended to the log.', registers, collect() { this.set(sources.headSeq()); } });
    new Gauge({ name: 'forum_log_durable_seq', help: 'Seq of the last record known to be on disk.', registers, collect() { this.set(sources.durableSeq()); } });
    new Gauge({ name: 'forum_log_bytes', help: 'Size of the log segment files (bytes).', registers, collect() { this.set(sources.logBytes()); } });
    new Gauge({
      name: 'forum_disk_free_bytes',
      help: 'Free bytes under the data folder as last measured (-1 when it cannot be measured).',
      registers,
      collect() {
        this.set(sources.diskFreeBytes() ?? -1);
      },
    });
    new Gauge({
      name: 'forum_rate_limiter_evictions_total',
      help: 'Keys dropped by a rate limiter at its key cap (their budgets start over), by limit.',
      labelNames: ['limit'],
      registers,
      collect() {
        for (const [limit, n] of Object.entries(sources.evictions())) this.set({ limit }, n);
      },
    });
    // A gauge that reads one figure of a sample taken when scraped.
    const sampled = <T>(read: () => T) => (name: string, help: string, pick: (sample: T) => number) =>
      new Gauge({ name, help, registers, collect() { this.set(pick(read())); } });
    const feeds = sources.feeds;
    if (feeds !== undefined) {
      const gauge = sampled(feeds);
      gauge('forum_feed_waiters', 'Long-polled feed and inbox requests held now (wait=SECONDS) and feed and inbox streams open now (Accept: text/event-stream).', (f) => f.waiters);
      gauge('forum_feed_stream_queued_bytes_max', 'The most bytes one open feed or inbox stream holds queued in the server for a client that has not taken them (at most FEED_STREAM_BUFFER_BYTES_MAX plus one page).', (f) => f.streamQueuedBytesMax);
      gauge('forum_feed_delivery_seconds_total', 'Main-thread time the delivery rounds of held feed requests and streams measured for themselves (their answers and stream writes, the writing of their answers, their followers\' next requests), in seconds: what their windows are sized by.', (f) => f.deliverySeconds);
    }
    const replication = sources.replication;
    if (replication !== undefined) {
      const gauge = sampled(replication);
      gauge('forum_replication_lag_records', 'Durable records not yet stored in the replica bucket.', (r) => r.lagRecords);
      gauge('forum_replication_lag_seconds', 'How long the oldest record not yet in the replica bucket has waited (seconds).', (r) => r.lagSeconds);
      gauge('forum_replication_shipped_seq', 'Seq of the last record stored in the replica bucket.', (r) => r.shippedSeq);
      gauge('forum_replication_epoch', 'Writer epoch this leader holds in the replica bucket.', (r) => r.epoch);
      gauge('forum_replication_fenced', '1 once another server took the leadership (this one refuses writes).', (r) => (r.fenced ? 1 : 0));
      gauge('forum_replication_bucket_missing_objects', 'Objects the leader\'s last periodic bucket check found missing (segments the manifest lists, shipped chunks); each is put back from the leader\'s log when it can be.', (r) => r.missingObjects);
      new Gauge({
        name: 'forum_replication_requests_total',
        help: 'Object-store requests since the start, by kind (puts, gets, lists, deletes, failures).',
        labelNames: ['kind'],
        registers,
        collect() {
          for (const [kind, n] of Object.entries(replication().requests)) this.set({ kind }, n);
        },
      });
    }
    const scrub = sources.scrub;
    if (scrub !== undefined) {
      const counter = sampled(scrub);
      counter('forum_scrub_bytes_total', 'Bytes of sealed log segments re-verified by the background scrub since the start.', (c) => c.bytes);
      counter('forum_scrub_passes_total', 'Passes of the background scrub over every sealed segment completed since the start.', (c) => c.passes);
      counter('forum_archive_damage_found_total', 'Damaged places in the log found by the background scrub since the start (each counted once).', (c) => c.damage);
    }
  }

  /** One answered request: method, route pattern (or null when no route matched), status, ms. */
  request(method: string, route: string | null, status: number, ms: number): void {
    const r = route ?? 'unmatched';
    this.requests.inc({ method, route: r, status: String(status) });
    this.durations.observe({ method, route: r }, ms / 1000);
  }

  /** One 429 of the named limit. */
  rateLimited(limit: string): void {
    this.limited.inc({ limit });
  }

  /** One group commit: its records, bytes and fdatasync time (ms). */
  groupCommit(records: number, bytes: number, fsyncMs: number): void {
    this.batchRecords.observe(records);
    this.batchBytes.observe(bytes);
    this.fsyncSeconds.observe(fsyncMs / 1000);
  }

  /**
   * Serves `GET /metrics` on `host:port` (port 0 picks a free one). Resolves to the listening
   * server; other paths get 404, other methods 405.
   */
  async listen(port: number, host: string): Promise<Server> {
    const server = createServer((req, res) => {
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('use GET\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': this.registry.contentType, 'Cache-Control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`metrics failed: ${err.message}\n`),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return server;
  }
}
