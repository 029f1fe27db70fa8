import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { observeViewLag } from '../metrics/worker-metrics.ts';
import { followLatest, type LatestFollower } from './follow-latest.ts';
import { decodeObjectEvent, type ObjectEvent, type RecordedObject } from './messages.ts';
import {
  kindFilter,
  type ObjectKey,
  objectSubjectKind,
  parseObjectSubject,
  RENEWED_KINDS,
} from './subjects.ts';
import { STREAMS } from './topology.ts';

interface SeqWaiter {
  seq: number;
  resolve: () => void;
}

export type LiveRecord = ObjectEvent & { op: 'upsert' };

/**
 * A handler's in-memory index of the live objects it needs, rebuilt at start
 * from K8S_LATEST (the latest record of every object, kept without age limit)
 * and then followed live. A tombstone removes the object, so memory holds live
 * objects only.
 *
 * A decision must never be made on state older than its cause: a handler
 * woken by stream sequence N calls `waitFor(N)` before reading. K8S_LATEST is
 * a mirror of K8S and keeps its sequence numbers; the view reads every subject
 * of it, keeping only the kinds it was asked for, so `waitFor` can tell when it
 * has caught up to any record.
 *
 * Lease renewals that change nothing else are on HEARTBEATS, not K8S (they must
 * not wake handlers); the view follows them too and answers `renewTime`, so a
 * handler knows each Lease's latest renewal without turning heartbeats into work.
 */
export class ObjectView {
  private readonly objects = new Map<string, Map<string, LiveRecord>>();
  /** `list(kind)` as last returned, until an object of that kind is recorded or removed. */
  private readonly lists = new Map<string, readonly RecordedObject[]>();
  private readonly renewals = new Map<string, string>();
  private readonly journals = new Map<string, { base: number; names: string[] }>();
  private readonly waiters: SeqWaiter[] = [];
  private readonly changeListeners = new Set<(kind: string) => void>();
  private readonly followers: LatestFollower[] = [];
  private appliedSeq = 0;
  /** Per stream followed: messages still to apply after the last one applied (`info.pending`). */
  private readonly pending = new Map<string, number>();
  private unobserve: () => void = () => undefined;
  private readonly kinds: ReadonlySet<string>;
  private readonly log: Logger;

  constructor(kinds: readonly string[], log: Logger) {
    this.kinds = new Set(kinds);
    this.log = log;
  }

  /** Starts following the bus; resolves once the view holds everything recorded before the call. */
  async start(js: JetStreamClient): Promise<void> {
    this.unobserve = observeViewLag(this);
    this.followers.push(
      await followLatest({
        js,
        stream: STREAMS.latest,
        filters: ['k8s.>'],
        onMessage: (m) => this.applyRecord(m),
        log: this.log,
      }),
    );
    const renewed = RENEWED_KINDS.filter((kind) => this.kinds.has(kind));
    if (renewed.length > 0) {
      this.followers.push(
        await followLatest({
          js,
          stream: STREAMS.heartbeats,
          filters: renewed.map((kind) => kindFilter('hb', kind)),
          onMessage: (m) => this.applyHeartbeat(m),
          log: this.log,
        }),
      );
    }
    await Promise.all(this.followers.map((f) => f.caughtUp));
  }

  stop(): void {
    for (const f of this.followers) f.stop();
    this.unobserve();
  }

  /** How far behind each stream the view is, in messages, as of the last message applied. */
  lag(): ReadonlyMap<string, number> {
    return this.pending;
  }

  get sequence(): number {
    return this.appliedSeq;
  }

  /**
   * Calls `listener` with the kind of every object recorded or removed from now on, as the view
   * applies it (not for heartbeats). For a process that acts on the view itself rather than on
   * work items (a webhook-server replica); returns the unsubscribe.
   */
  onChange(listener: (kind: string) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Resolves once every record up to stream sequence `seq` has been applied. */
  waitFor(seq: number, timeoutMs = 30_000): Promise<void> {
    if (this.appliedSeq >= seq) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `view did not reach stream sequence ${seq} within ${timeoutMs} ms (at ${this.appliedSeq})`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({
        seq,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /**
   * The live objects of a kind. The same array while no object of the kind is recorded or
   * removed, so a reader can tell "nothing of this kind changed" by reference
   * (views/view-reads.ts derivedFromView) instead of by walking every object.
   */
  list(kind: string): readonly RecordedObject[] {
    let list = this.lists.get(kind);
    if (list === undefined) {
      list = Object.freeze([...(this.objects.get(kind)?.values() ?? [])].map((e) => e.object));
      this.lists.set(kind, list);
    }
    return list;
  }

  get(key: ObjectKey): RecordedObject | undefined {
    return this.record(key)?.object;
  }

  /**
   * The `namespace/name`s of the objects of `kind` recorded or removed since `position` (a
   * position an earlier call returned; 0 at first), and the position to ask from next time. For
   * a reader that keeps its own index of a kind up to date one change at a time instead of
   * walking every object (handlers/assign-world.ts). Undefined when the journal no longer reaches
   * back that far: read every object again (`records`).
   */
  changesSince(kind: string, position: number): { names: readonly string[]; position: number } | undefined {
    const journal = this.journals.get(kind);
    if (!journal) return { names: [], position };
    if (position < journal.base) return undefined;
    return {
      names: journal.names.slice(position - journal.base),
      position: journal.base + journal.names.length,
    };
  }

  /** The latest record of a live object, with how it was observed and whether its content was omitted. */
  record(key: ObjectKey): LiveRecord | undefined {
    return this.objects.get(key.kind)?.get(nameKey(key));
  }

  /** The live records of a kind. */
  records(kind: string): LiveRecord[] {
    return [...(this.objects.get(kind)?.values() ?? [])];
  }

  /**
   * The latest `spec.renewTime` of a live Lease: the later of its record's and
   * its last heartbeat's. Undefined when the Lease is not live or never renewed.
   */
  renewTime(key: ObjectKey): string | undefined {
    const object = this.get(key);
    if (!object) return undefined;
    const recorded = renewTimeOf(object);
    const heartbeat = this.renewals.get(fullKey(key));
    if (recorded === undefined || heartbeat === undefined) return recorded ?? heartbeat;
    return Date.parse(heartbeat) > Date.parse(recorded) ? heartbeat : recorded;
  }

  private applyRecord(m: JsMsg): void {
    this.pending.set(STREAMS.latest, m.info.pending);
    this.apply(m);
  }

  /**
   * Applies one record of K8S (or its mirror) as if the view had followed it: what `switchyard
   * replay` feeds a view with to rebuild it at a past sequence, in stream order.
   */
  apply(m: Pick<JsMsg, 'subject' | 'seq' | 'data'>): void {
    const kind = objectSubjectKind(m.subject);
    const key = kind !== undefined && this.kinds.has(kind) ? parseObjectSubject(m.subject) : undefined;
    if (key) {
      const decoded = decodeObjectEvent(m.data);
      if (decoded.ok) {
        this.store(key, decoded.value);
        for (const listener of this.changeListeners) listener(key.kind);
      }
      // The recorder validated it on the way in; a record that fails here was
      // written by something else. Skip it, keep following.
      else
        this.log.warn(
          { subject: m.subject, seq: m.seq, reason: decoded.reason },
          'skipping an invalid record',
        );
    }
    this.appliedSeq = Math.max(this.appliedSeq, m.seq);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w && w.seq <= this.appliedSeq) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  private store(key: ObjectKey, event: ObjectEvent): void {
    const name = nameKey(key);
    this.lists.delete(key.kind);
    this.journalOf(key.kind).push(name);
    let byName = this.objects.get(key.kind);
    if (!byName) {
      byName = new Map();
      this.objects.set(key.kind, byName);
    }
    if (event.op === 'upsert') {
      byName.set(name, event);
      return;
    }
    byName.delete(name);
    this.renewals.delete(fullKey(key));
  }

  /** Every change of a kind, by name; halved once it is twice as long as the kind has objects, and more. */
  private journalOf(kind: string): string[] {
    let journal = this.journals.get(kind);
    if (!journal) {
      journal = { base: 0, names: [] };
      this.journals.set(kind, journal);
    }
    const live = this.objects.get(kind)?.size ?? 0;
    if (journal.names.length > 2 * live + JOURNAL_SLACK) {
      const dropped = journal.names.length >> 1;
      journal.names = journal.names.slice(dropped);
      journal.base += dropped;
    }
    return journal.names;
  }

  private applyHeartbeat(m: JsMsg): void {
    this.pending.set(STREAMS.heartbeats, m.info.pending);
    const key = parseObjectSubject(m.subject);
    if (!key) return;
    const decoded = decodeObjectEvent(m.data);
    const renewTime = decoded.ok ? renewTimeOf(decoded.value.object) : undefined;
    if (renewTime !== undefined) this.renewals.set(fullKey(key), renewTime);
  }
}

/** Changes a journal keeps beyond twice its kind's objects, so a small kind is not compacted on every write. */
const JOURNAL_SLACK = 4_096;

function nameKey(key: ObjectKey): string {
  return `${key.namespace}/${key.name}`;
}

function fullKey(key: ObjectKey): string {
  return `${key.kind}/${key.namespace}/${key.name}`;
}

function renewTimeOf(object: RecordedObject | undefined): string | undefined {
  const renewTime = (object as { spec?: { renewTime?: unknown } } | undefined)?.spec?.renewTime;
  return typeof renewTime === 'string' ? renewTime : undefined;
}
