import type { KubeConfig, Watch } from '@kubernetes/client-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import {
  encodeMessage,
  type ObjectEvent,
  objectEventId,
  objectEventSchema,
  type RecordedObject,
  recordedObjectSchema,
} from '../bus/messages.ts';
import { heartbeatSubject, objectSubject } from '../bus/subjects.ts';
import { ApiStatusError, listObjects } from './list-objects.ts';
import type { WatchedResource } from './resources.ts';

export interface WatcherStats {
  published: number;
  duplicates: number;
  heartbeats: number;
  tombstones: number;
  relists: number;
}

interface Known {
  uid: string;
  object: RecordedObject;
}

const MAX_BACKOFF_MS = 30_000;

/** The part of the informers client (src/kube/clients.ts) a watcher uses. */
export interface WatcherClient {
  kubeConfig: KubeConfig;
  newWatch(): Watch;
}

function keyOf(o: RecordedObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

function withoutManagedFields(o: RecordedObject): RecordedObject {
  const { managedFields: _dropped, ...metadata } = o.metadata as RecordedObject['metadata'] & {
    managedFields?: unknown;
  };
  return { ...o, metadata };
}

/**
 * A thin watcher: list + watch one kind of object and record every change on
 * the bus, nothing else.
 *
 * - It resumes from what the stream already holds (`known`, from the view), so
 *   a restart or a second replica republishes nothing the stream has: every
 *   message carries a deterministic `Nats-Msg-Id` and the stream stores it once.
 * - On 410 Gone (the watch fell behind a compaction) it relists and records a
 *   tombstone for every object the stream knows that the list no longer has:
 *   deletions missed during the gap are not lost.
 * - Watches ask for bookmarks, so a quiet watch resumes without a relist.
 * - Changes a resource marks as heartbeat-only (a Lease renewal) go to the
 *   heartbeat stream, never to the record stream that wakes handlers.
 */
export class ObjectWatcher {
  readonly stats: WatcherStats = { published: 0, duplicates: 0, heartbeats: 0, tombstones: 0, relists: 0 };
  private readonly known = new Map<string, Known>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private stopped = false;
  private backoffMs = 500;
  private readonly resource: WatchedResource;
  private readonly informers: WatcherClient;
  private readonly js: JetStreamClient;
  private readonly log: Logger;

  constructor(opts: {
    resource: WatchedResource;
    /** The process's informers client: lists and watches carry its identity and User-Agent. */
    informers: WatcherClient;
    js: JetStreamClient;
    log: Logger;
    /** The last recorded event of each object of this kind, from the stream. */
    recorded: ObjectEvent[];
    /** Resume watching from this resourceVersion instead of listing first (a watcher that kept its place). */
    resumeFrom?: string;
  }) {
    this.resourceVersion = opts.resumeFrom ?? '';
    this.resource = opts.resource;
    this.informers = opts.informers;
    this.js = opts.js;
    this.log = opts.log.child({ kind: opts.resource.kind });
    for (const e of opts.recorded) {
      if (e.op === 'upsert')
        this.known.set(keyOf(e.object), { uid: e.object.metadata.uid, object: e.object });
    }
  }

  /** Lists, records the differences with the stream, and starts watching. */
  async start(): Promise<void> {
    if (!this.resourceVersion) await this.relist();
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

  private async relist(): Promise<void> {
    const list = await listObjects(this.informers.kubeConfig, this.resource.path, {
      labelSelector: this.resource.labelSelector,
    });
    this.stats.relists++;
    const listed = new Set<string>();
    for (const item of list.items) {
      const object = withoutManagedFields(item);
      listed.add(keyOf(object));
      const previous = this.known.get(keyOf(object));
      if (previous?.object.metadata.resourceVersion === object.metadata.resourceVersion) continue;
      if (previous && previous.uid !== object.metadata.uid)
        await this.recordDeletion(previous.object, 'relist-gap');
      await this.recordUpsert(object, 'list');
    }
    for (const [key, { object }] of [...this.known]) {
      if (!listed.has(key)) await this.recordDeletion(object, 'relist-gap');
    }
    this.resourceVersion = list.resourceVersion;
    this.log.debug({ items: list.items.length, resourceVersion: list.resourceVersion }, 'listed');
  }

  private watch(): void {
    if (this.stopped) return;
    const query = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      labelSelector: this.resource.labelSelector,
    };
    let queue = Promise.resolve();
    let gone = false;
    const onEvent = (type: string, obj: unknown) => {
      if (type === 'ERROR') {
        gone = (obj as { code?: number }).code === 410;
        if (!gone) this.log.warn({ status: obj }, 'watch error event');
        return;
      }
      queue = queue
        .then(() => this.onWatchEvent(type, obj))
        .catch((err) => this.log.error({ err }, 'recording failed'));
    };
    const onDone = (err: unknown) => {
      void queue.then(() => this.afterWatch(err, gone));
    };
    this.informers
      .newWatch()
      .watch(this.resource.path, query, onEvent, onDone)
      .then((abort) => {
        this.abort = abort;
        if (this.stopped) abort.abort();
      })
      .catch(onDone);
  }

  private async afterWatch(err: unknown, gone: boolean): Promise<void> {
    if (this.stopped) return;
    const expired = gone || (err as { statusCode?: number } | null)?.statusCode === 410;
    const timedOut = (err as { name?: string } | null)?.name === 'TimeoutError';
    if (err && !expired && !timedOut) {
      this.log.warn({ err, backoffMs: this.backoffMs }, 'watch failed; retrying');
      await new Promise((r) => setTimeout(r, this.backoffMs));
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
    }
    try {
      if (expired) {
        this.log.info({ resourceVersion: this.resourceVersion }, 'watch expired (410); relisting');
        await this.relist();
      }
      this.watch();
    } catch (e) {
      const status = e instanceof ApiStatusError ? e.statusCode : undefined;
      this.log.warn({ err: e, status }, 'relist failed; retrying');
      await new Promise((r) => setTimeout(r, this.backoffMs));
      this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
      await this.afterWatch({ statusCode: 410 }, true);
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
    this.backoffMs = 500;
    if (type === 'DELETED') await this.recordDeletion(object, 'watch');
    else await this.recordUpsert(object, 'watch');
    this.resourceVersion = object.metadata.resourceVersion;
  }

  private async recordUpsert(object: RecordedObject, observedBy: 'watch' | 'list'): Promise<void> {
    const previous = this.known.get(keyOf(object));
    const key = {
      kind: this.resource.kind,
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
    };
    const event: ObjectEvent = { op: 'upsert', object, observedBy, observedAt: new Date().toISOString() };
    const heartbeat =
      previous?.uid === object.metadata.uid &&
      this.resource.isHeartbeatOnly?.(previous.object, object) === true;
    await this.publish(heartbeat ? heartbeatSubject(key) : objectSubject(key), event);
    if (heartbeat) this.stats.heartbeats++;
    // A heartbeat leaves `known` at the recorded content, so the next real change
    // is compared with what the record stream holds.
    if (!heartbeat) this.known.set(keyOf(object), { uid: object.metadata.uid, object });
  }

  private async recordDeletion(object: RecordedObject, observedBy: 'watch' | 'relist-gap'): Promise<void> {
    const key = {
      kind: this.resource.kind,
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
    };
    await this.publish(objectSubject(key), {
      op: 'delete',
      object,
      observedBy,
      observedAt: new Date().toISOString(),
    });
    if (observedBy === 'relist-gap') this.stats.tombstones++;
    const current = this.known.get(keyOf(object));
    if (current?.uid === object.metadata.uid) this.known.delete(keyOf(object));
  }

  private async publish(subject: string, event: ObjectEvent): Promise<void> {
    const ack = await this.js.publish(subject, encodeMessage(objectEventSchema, event), {
      msgID: objectEventId(event),
    });
    if (ack.duplicate) this.stats.duplicates++;
    else this.stats.published++;
  }
}
