import type { KubeConfig, Watch } from '@kubernetes/client-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { followLatest } from '../bus/follow-latest.ts';
import {
  decodeObjectEvent,
  encodeMessage,
  type ObjectEvent,
  objectEventSchema,
  type RecordedObject,
  recordedObjectSchema,
} from '../bus/messages.ts';
import {
  NOTHING_STORED,
  type RecordWriter,
  type StoredRecord,
  type WriteResult,
} from '../bus/records/record-writer.ts';
import {
  heartbeatSubject,
  kindFilter,
  objectSubject,
  parseObjectSubject,
  RENEWED_KINDS,
} from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import { type BackoffPolicy, retryDelayMs } from '../runtime/backoff.ts';
import { systemClock } from '../runtime/clock.ts';
import { listObjects } from './list-objects.ts';
import { type Identity, keyOfIdentity, relistDiff } from './relist-diff.ts';
import { revivesAfterGap, type WatchedResource } from './resources.ts';
import { nextStep, type WatchEnd } from './watch-outcome.ts';

export interface WatcherStats {
  /** Records stored on the bus. */
  published: number;
  /** Records the bus already had (another replica, a relist, a retried publish). */
  duplicates: number;
  /** Records refused because the bus holds a newer state of the object (a lagging replica). */
  stale: number;
  heartbeats: number;
  tombstones: number;
  relists: number;
  /** Objects recorded without their content: too large for the bus even compressed. */
  oversized: number;
  /** Changes the bus did not store (NATS unreachable); each led to a relist. */
  recordFailures: number;
}

/** What a watcher keeps of each recorded object: enough to diff and order, never the object itself. */
export interface KnownRecord {
  identity: Identity;
  stored: StoredRecord;
  /** The resource's content digest (Leases), to tell a renewal from a change. */
  digest?: string;
  /** The last renewal recorded or published as a heartbeat (Leases), epoch ms. */
  renewedAtMs?: number;
}

/** After a failed watch or relist: from 0.5 s, doubling to 30 s, jittered so two watcher replicas do not retry in step. */
const WATCH_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };

/** The part of the informers client (src/kube/clients.ts) a watcher uses. */
export interface WatcherClient {
  kubeConfig: KubeConfig;
  newWatch(): Watch;
}

function withoutManagedFields(o: RecordedObject): RecordedObject {
  const { managedFields: _dropped, ...metadata } = o.metadata as RecordedObject['metadata'] & {
    managedFields?: unknown;
  };
  return { ...o, metadata };
}

function identityOf(o: RecordedObject): Identity {
  const { name, namespace = '', uid, resourceVersion } = o.metadata;
  return { name, namespace, uid, resourceVersion };
}

/**
 * What the bus holds of one kind (K8S_LATEST, the latest record of every
 * object), reduced to what a watcher keeps. Read once at start.
 */
export async function loadRecorded(
  js: JetStreamClient,
  resource: WatchedResource,
  log: Logger,
): Promise<Map<string, KnownRecord>> {
  const known = new Map<string, KnownRecord>();
  const follower = await followLatest({
    js,
    stream: STREAMS.latest,
    filters: [kindFilter('k8s', resource.kind)],
    log,
    onMessage: (m) => {
      const key = parseObjectSubject(m.subject);
      const decoded = decodeObjectEvent(m.data);
      if (!key || !decoded.ok) return;
      const { op, object } = decoded.value;
      if (op === 'delete') {
        known.delete(keyOfIdentity(key));
        return;
      }
      known.set(keyOfIdentity(key), {
        identity: identityOf(object),
        stored: {
          seq: m.seq,
          summary: { op, uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion },
        },
        ...(resource.contentDigest && !decoded.value.omitted
          ? { digest: resource.contentDigest(object) }
          : {}),
        ...renewedAt(resource, object),
      });
    },
  });
  await follower.caughtUp;
  follower.stop();
  return known;
}

/**
 * A thin watcher: list + watch one kind of object and record every change on
 * the bus, nothing else.
 *
 * - It starts from what the bus holds (`loadRecorded`), so a restart or a
 *   second replica records nothing the bus has, and records go through the
 *   RecordWriter, which never stores an older state of an object over a newer
 *   one: two replicas, however far one lags, cannot resurrect a deletion.
 * - It never moves its position past a change the bus did not store: when a
 *   record cannot be stored (NATS unreachable), the watch is dropped and the
 *   watcher relists, with backoff, until the bus has caught up with the list.
 * - On 410 Gone (or any other watch ERROR) it relists and records a tombstone
 *   for every object the bus holds that the list no longer has.
 * - Watches ask for bookmarks, so a quiet watch resumes without a relist.
 * - A Lease change that keeps its content digest is a heartbeat: it goes to
 *   HEARTBEATS, never to the record stream that wakes handlers.
 * - An object too large for the bus even compressed is recorded without its
 *   content, counted and logged, never fatal.
 */
export class ObjectWatcher {
  readonly stats: WatcherStats = {
    published: 0,
    duplicates: 0,
    stale: 0,
    heartbeats: 0,
    tombstones: 0,
    relists: 0,
    oversized: 0,
    recordFailures: 0,
  };
  private readonly known: Map<string, KnownRecord>;
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private stopped = false;
  /** Bumped when a watch is abandoned: events still queued from it are ignored. */
  private generation = 0;
  /** Failed rounds since the last change was stored; sets the next pause. */
  private failures = 0;
  private readonly resource: WatchedResource;
  private readonly informers: WatcherClient;
  private readonly writer: RecordWriter;
  private readonly js: JetStreamClient;
  private readonly log: Logger;
  private readonly onOversized: ((object: RecordedObject, bytes: number) => void) | undefined;

  constructor(opts: {
    resource: WatchedResource;
    /** The process's informers client: lists and watches carry its identity and User-Agent. */
    informers: WatcherClient;
    writer: RecordWriter;
    /** For heartbeats, which are published without an ordering check (readers keep the latest renewal). */
    js: JetStreamClient;
    log: Logger;
    /** What the bus holds of this kind (`loadRecorded`). */
    recorded: Map<string, KnownRecord>;
    /** Told of each object recorded without its content (the process records a Warning Event). */
    onOversized?: (object: RecordedObject, bytes: number) => void;
  }) {
    // A renewal of any other kind would go to HEARTBEATS, which no view of that kind follows.
    if (opts.resource.contentDigest && !RENEWED_KINDS.includes(opts.resource.kind))
      throw new Error(
        `${opts.resource.kind} is not a renewed kind (${RENEWED_KINDS.join(', ')}): it cannot have heartbeats`,
      );
    this.onOversized = opts.onOversized;
    this.resource = opts.resource;
    this.informers = opts.informers;
    this.writer = opts.writer;
    this.js = opts.js;
    this.log = opts.log.child({ kind: opts.resource.kind });
    this.known = opts.recorded;
  }

  /** Lists, records the differences with the bus, and starts watching. */
  async start(): Promise<void> {
    await this.relist();
    this.watch();
  }

  /** Where the watcher is: the resourceVersion it would resume from. */
  get position(): string {
    return this.resourceVersion;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  /**
   * Stops, and records every object it knows of as deleted, as a relist that lists none would:
   * for a kind whose API went away, and its objects with it. Given a watcher that was never
   * started, that is every object the bus holds of the kind. Resolves to how many it knew.
   */
  async recordAllGone(): Promise<number> {
    this.stop();
    return this.recordListed([]);
  }

  private async relist(): Promise<void> {
    const list = await listObjects(this.informers.kubeConfig, this.resource.path, {
      labelSelector: this.resource.labelSelector,
    });
    this.stats.relists++;
    await this.recordListed(list.items);
    this.resourceVersion = list.resourceVersion;
    this.log.debug({ items: list.items.length, resourceVersion: list.resourceVersion }, 'listed');
  }

  /** Records what a list says that the bus does not have; resolves to how many objects were gone. */
  private async recordListed(listed: RecordedObject[]): Promise<number> {
    const known = new Map([...this.known].map(([key, k]) => [key, k.identity]));
    const { gone, changed } = relistDiff(known, listed);
    for (const identity of gone) await this.recordDeletion(identity, 'relist-gap');
    for (const item of changed) await this.recordUpsert(withoutManagedFields(item), 'list');
    return gone.length;
  }

  private watch(): void {
    if (this.stopped) return;
    const generation = ++this.generation;
    const query = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      labelSelector: this.resource.labelSelector,
    };
    const end: WatchEnd = { recordFailed: false };
    let queue = Promise.resolve();
    let ended = false;
    const onEvent = (type: string, obj: unknown) => {
      if (generation !== this.generation) return;
      if (type === 'ERROR') {
        end.errorEvent = obj as WatchEnd['errorEvent'];
        this.log.info({ status: obj }, 'watch error event');
        return;
      }
      queue = queue
        .then(() => (generation === this.generation ? this.onWatchEvent(type, obj) : undefined))
        .catch((err) => {
          if (generation !== this.generation) return;
          this.stats.recordFailures++;
          this.log.warn(
            { err, resourceVersion: this.resourceVersion },
            'change not recorded; dropping the watch to relist',
          );
          end.recordFailed = true;
          this.generation++;
          this.abort?.abort();
        });
    };
    const onDone = (err: unknown) => {
      if (ended) return;
      ended = true;
      end.err = err ?? undefined;
      void queue.then(() => this.afterWatch(end));
    };
    this.informers
      .newWatch()
      .watch(this.resource.path, query, onEvent, onDone)
      .then((abort) => {
        this.abort = abort;
        if (this.stopped || generation !== this.generation) abort.abort();
      })
      .catch(onDone);
  }

  private async afterWatch(end: WatchEnd): Promise<void> {
    let { relist, backoff } = nextStep(end);
    for (;;) {
      if (this.stopped) return;
      if (backoff) {
        const backoffMs = retryDelayMs(++this.failures, WATCH_BACKOFF);
        this.log.info({ backoffMs, relist, err: end.err }, 'watch ended; retrying after a pause');
        await systemClock.sleep(backoffMs);
      }
      if (this.stopped) return;
      try {
        if (relist) {
          this.log.info({ resourceVersion: this.resourceVersion }, 'relisting');
          await this.relist();
        }
        this.watch();
        return;
      } catch (err) {
        this.log.warn({ err }, 'relist failed; retrying');
        relist = true;
        backoff = true;
      }
    }
  }

  private async onWatchEvent(type: string, raw: unknown): Promise<void> {
    if (type === 'BOOKMARK') {
      this.resourceVersion = (raw as RecordedObject).metadata?.resourceVersion ?? this.resourceVersion;
      return;
    }
    const parsed = recordedObjectSchema.safeParse(raw);
    if (!parsed.success) {
      this.log.warn({ type }, 'watch event without name, uid or resourceVersion; skipped');
      return;
    }
    const object = withoutManagedFields(parsed.data);
    if (type === 'DELETED') await this.recordDeletion(object, 'watch');
    else await this.recordUpsert(object, 'watch');
    // Only now, with the change stored, may the position move past it.
    this.resourceVersion = object.metadata.resourceVersion;
    this.failures = 0;
  }

  private subjectKey(o: { name: string; namespace?: string | undefined }) {
    return { kind: this.resource.kind, namespace: o.namespace ?? '', name: o.name };
  }

  private async recordUpsert(object: RecordedObject, observedBy: 'watch' | 'list'): Promise<void> {
    const key = keyOfIdentity(object.metadata);
    const previous = this.known.get(key);
    const digest = this.resource.contentDigest?.(object);
    const event: ObjectEvent = {
      op: 'upsert',
      object,
      observedBy,
      observedAt: new Date(systemClock.now()).toISOString(),
    };
    const renewal = this.resource.renewal?.(object);
    if (
      digest !== undefined &&
      previous?.digest === digest &&
      previous.identity.uid === object.metadata.uid &&
      !(renewal && revivesAfterGap(previous.renewedAtMs, renewal))
    ) {
      await this.js.publish(
        heartbeatSubject(this.subjectKey(object.metadata)),
        encodeMessage(objectEventSchema, event),
      );
      this.stats.heartbeats++;
      if (renewal?.atMs !== undefined) previous.renewedAtMs = renewal.atMs;
      return;
    }
    const result = await this.writer.write(
      objectSubject(this.subjectKey(object.metadata)),
      event,
      this.expectation(key),
    );
    this.count(result, object);
    if (result.outcome === 'stale') this.adoptStored(key, result, identityOf(object));
    else
      this.known.set(key, {
        identity: identityOf(object),
        stored: result.stored,
        ...(digest ? { digest } : {}),
        ...renewedAt(this.resource, object),
      });
  }

  private async recordDeletion(
    object: RecordedObject | Identity,
    observedBy: 'watch' | 'relist-gap',
  ): Promise<void> {
    const asObject: RecordedObject =
      'metadata' in object
        ? object
        : {
            metadata: {
              name: object.name,
              namespace: object.namespace,
              uid: object.uid,
              resourceVersion: object.resourceVersion,
            },
          };
    const key = keyOfIdentity(asObject.metadata);
    const event: ObjectEvent = {
      op: 'delete',
      object: asObject,
      observedBy,
      observedAt: new Date(systemClock.now()).toISOString(),
    };
    const result = await this.writer.write(
      objectSubject(this.subjectKey(asObject.metadata)),
      event,
      this.expectation(key),
    );
    this.count(result, asObject);
    if (observedBy === 'relist-gap' && result.outcome === 'stored') this.stats.tombstones++;
    if (result.outcome === 'stale') this.adoptStored(key, result, identityOf(asObject));
    else this.known.delete(key);
  }

  /**
   * What the watcher expects the subject's last record to be. It loaded every
   * record of its kind, so an object it does not know has none (a tombstone at
   * most): a wrong guess costs one lost race, never a wrong write.
   */
  private expectation(key: string): StoredRecord {
    return this.known.get(key)?.stored ?? NOTHING_STORED;
  }

  /** The bus holds a newer state than this watcher saw: adopt it (it is what a later relist compares with). */
  private adoptStored(key: string, result: WriteResult, seen: Identity): void {
    const latest = result.stored.summary;
    if (!latest || latest.op === 'delete') {
      this.known.delete(key);
      return;
    }
    const identity = { ...seen, uid: latest.uid, resourceVersion: latest.resourceVersion };
    this.known.set(key, { identity, stored: result.stored });
  }

  private count(result: WriteResult, object: RecordedObject): void {
    if (result.outcome === 'stored') this.stats.published++;
    else if (result.outcome === 'duplicate') this.stats.duplicates++;
    else this.stats.stale++;
    if (result.omittedBytes !== undefined) {
      this.stats.oversized++;
      this.log.error(
        { name: object.metadata.name, namespace: object.metadata.namespace, bytes: result.omittedBytes },
        'object too large for the bus even compressed: recorded without its content; raise the NATS max_payload',
      );
      this.onOversized?.(object, result.omittedBytes);
    }
  }
}

function renewedAt(resource: WatchedResource, object: unknown): { renewedAtMs?: number } {
  const atMs = resource.renewal?.(object).atMs;
  return atMs === undefined ? {} : { renewedAtMs: atMs };
}
