import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../runtime/clock.ts';
import type { ViewProjections } from '../views/projection.ts';
import { type FollowedMessage, followLatest, type LatestFollower } from './follow-latest.ts';
import { decodeObjectEvent, type ObjectEvent, type RecordedObject } from './messages.ts';
import {
  kindFilter,
  type ObjectKey,
  objectSubject,
  objectSubjectKind,
  parseObjectSubject,
  RENEWED_KINDS,
} from './subjects.ts';
import { STREAMS } from './topology.ts';
import {
  DEFAULT_VIEW_LAG_POLICY,
  type LagCheck,
  ViewBehindError,
  type ViewLag,
  type ViewLagPolicy,
  ViewLagTracker,
} from './view-lag.ts';

interface SeqWaiter {
  seq: number;
  resolve: () => void;
}

/**
 * A live object's latest record. `projected`: `object` holds only the fields the view's reader
 * declared (views/projection.ts), and `seq` is where the whole record is on the bus (`whole`).
 */
export type LiveRecord = ObjectEvent & { op: 'upsert'; seq?: number; projected?: true };

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
 * has caught up to any record. The mirror keeps only each object's last record,
 * so a view that falls behind skips records replaced meanwhile: it counts as
 * having reached N only once it holds every record up to N or the one that
 * replaced it (settled-sequence.ts), not when it has merely read past N.
 *
 * Lease renewals that change nothing else are on HEARTBEATS, not K8S (they must
 * not wake handlers); the view follows them too and answers `renewTime`, so a
 * handler knows each Lease's latest renewal without turning heartbeats into work.
 *
 * A reader declares, per kind, the fields it reads (`project`): the view keeps only those, and
 * `whole` reads the rest of one object again from the bus when the reader needs it.
 *
 * It also knows how far behind the bus it is (`freshness`, view-lag.ts): it asks the
 * server on a period where its consumers are, says so when it falls behind or
 * cannot tell (a log line, `onFreshnessChange`, and `lag` and `freshness`, which a
 * worker's wiring hands to its metrics), recreates its consumers when their own
 * recovery stalls, and lets a reader wait until it is current (`waitCurrent`)
 * before acting on what it holds.
 */
export class ObjectView {
  private readonly objects = new Map<string, Map<string, LiveRecord>>();
  /** `list(kind)` as last returned, until an object of that kind is recorded or removed. */
  private readonly lists = new Map<string, readonly RecordedObject[]>();
  private readonly renewals = new Map<string, string>();
  private readonly journals = new Map<string, { base: number; names: string[] }>();
  private readonly waiters: SeqWaiter[] = [];
  private readonly changeListeners = new Set<(kind: string) => void>();
  private readonly freshnessListeners = new Set<(lag: ViewLag) => void>();
  private readonly followers: { stream: string; follower: LatestFollower }[] = [];
  private appliedSeq = 0;
  /** What the view vouches for: `appliedSeq`, held back while a replaced record is still missing. */
  private settledSeq = 0;
  /** Per stream followed: messages not applied yet, at the last check. */
  private readonly pending = new Map<string, number>();
  private readonly kinds: ReadonlySet<string>;
  private readonly projections: ViewProjections;
  private jsm: JetStreamManager | undefined;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly lagPolicy: Readonly<ViewLagPolicy>;
  private readonly tracker: ViewLagTracker;
  private readonly stopping = new AbortController();
  private lastState: ViewLag['state'] | undefined;
  /** Resolves once `stop()` was called: what an observer of the view (a worker's metrics) ends on. */
  readonly stopped: Promise<void>;
  private resolveStopped: () => void = () => undefined;

  constructor(
    kinds: readonly string[],
    log: Logger,
    opts: { lag?: Partial<ViewLagPolicy>; clock?: Clock; project?: ViewProjections } = {},
  ) {
    this.kinds = new Set(kinds);
    this.projections = opts.project ?? {};
    this.log = log;
    this.clock = opts.clock ?? systemClock;
    this.lagPolicy = { ...DEFAULT_VIEW_LAG_POLICY, ...opts.lag };
    this.tracker = new ViewLagTracker(this.lagPolicy, this.clock.monotonic());
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  /** Starts following the bus; resolves once the view holds everything recorded before the call. */
  async start(js: JetStreamClient): Promise<void> {
    this.followers.push({
      stream: STREAMS.latest,
      follower: await followLatest({
        js,
        stream: STREAMS.latest,
        filters: ['k8s.>'],
        history: STREAMS.records,
        onMessage: (m, settledSeq) => {
          this.apply(m, settledSeq);
          this.settleOpenQuestion();
        },
        log: this.log,
      }),
    });
    const renewed = RENEWED_KINDS.filter((kind) => this.kinds.has(kind));
    if (renewed.length > 0) {
      this.followers.push({
        stream: STREAMS.heartbeats,
        follower: await followLatest({
          js,
          stream: STREAMS.heartbeats,
          filters: renewed.map((kind) => kindFilter('hb', kind)),
          onMessage: (m) => {
            this.applyHeartbeat(m);
            this.settleOpenQuestion();
          },
          log: this.log,
        }),
      });
    }
    await Promise.all(this.followers.map((f) => f.follower.caughtUp));
    const jsm = await js.jetstreamManager();
    this.jsm = jsm;
    await this.checkLag(jsm);
    void this.followLag(jsm);
  }

  stop(): void {
    this.stopping.abort();
    for (const f of this.followers) f.follower.stop();
    this.resolveStopped();
  }

  /** Per stream followed: messages the bus held that the view had not applied, at the last check. */
  lag(): ReadonlyMap<string, number> {
    return this.pending;
  }

  /** How far behind the bus the view is now, and since when (view-lag.ts). */
  freshness(): ViewLag {
    return this.tracker.lag(this.clock.monotonic());
  }

  /** Calls `listener` whenever the view's freshness is checked (about every `checkEveryMs`); returns the unsubscribe. */
  onFreshnessChange(listener: (lag: ViewLag) => void): () => void {
    this.freshnessListeners.add(listener);
    return () => this.freshnessListeners.delete(listener);
  }

  /**
   * Resolves once the view is current (at once if it is); rejects with a `ViewBehindError` after
   * `timeoutMs`, or when `signal` aborts. What a decision that needs the present state waits on.
   */
  waitCurrent(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.freshness().state === 'current') return Promise.resolve();
    return new Promise((resolve, reject) => {
      const finish = (err?: Error) => {
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener('abort', aborted);
        if (err) reject(err);
        else resolve();
      };
      const aborted = () => finish(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      const timer = setTimeout(() => {
        const lag = this.freshness();
        finish(
          new ViewBehindError(`the view did not become current within ${timeoutMs} ms: ${lag.reason}`, lag),
        );
      }, timeoutMs);
      const unsubscribe = this.onFreshnessChange((lag) => {
        if (lag.state === 'current') finish();
      });
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  /** The sequence the view has reached: every record up to it is held, or the record that replaced it. */
  get sequence(): number {
    return this.settledSeq;
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

  /**
   * Resolves once every record up to stream sequence `seq` has been applied and the view is
   * current (`waitCurrent`): a decision is made neither on state older than its cause nor on a
   * view that has fallen behind the bus since. Rejects with a `ViewBehindError` (retried, never
   * dead-lettered: runtime/errors.ts) when either takes longer than `timeoutMs`.
   */
  async waitFor(seq: number, timeoutMs = DEFAULT_WAIT_MS): Promise<void> {
    const startedAt = this.clock.monotonic();
    await this.waitForSeq(seq, timeoutMs);
    await this.waitCurrent(Math.max(0, timeoutMs - (this.clock.monotonic() - startedAt)));
  }

  private waitForSeq(seq: number, timeoutMs: number): Promise<void> {
    if (this.settledSeq >= seq) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new ViewBehindError(
              `view did not reach stream sequence ${seq} within ${timeoutMs} ms (at ${this.settledSeq}, read up to ${this.appliedSeq})`,
              this.freshness(),
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
   * walking every object (handlers/assign/world.ts). Undefined when the journal no longer reaches
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

  /**
   * A live object as recorded, every field: the held object when the view keeps its kind whole,
   * otherwise read again from the bus, the very record the view projected (by its sequence in
   * K8S) or, once the history no longer has it, the latest of its subject (K8S_LATEST), which may
   * be newer than what the view holds. Undefined when the object is not live, or its record is gone
   * or unreadable.
   */
  async whole(key: ObjectKey): Promise<RecordedObject | undefined> {
    const record = this.record(key);
    if (!record?.projected) return record?.object;
    if (!this.jsm) throw new Error(`the view reads ${key.kind} records again from the bus only once started`);
    const subject = objectSubject(key);
    // The stream's own get for the sequence: a direct get may be answered by the mirror (mirror_direct),
    // which holds only each subject's last record.
    const exact =
      record.seq === undefined
        ? null
        : await this.jsm.streams.getMessage(STREAMS.records, { seq: record.seq });
    const stored =
      exact?.subject === subject
        ? exact
        : await this.jsm.direct.getMessage(STREAMS.latest, { last_by_subj: subject });
    if (!stored) return undefined;
    const decoded = decodeObjectEvent(stored.data);
    if (!decoded.ok) {
      this.log.warn({ subject, seq: stored.seq, reason: decoded.reason }, 'skipping an invalid record');
      return undefined;
    }
    return decoded.value.op === 'upsert' ? decoded.value.object : undefined;
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

  /**
   * Applies one record of K8S (or its mirror) as if the view had followed it: what `switchyard
   * replay` feeds a view with to rebuild it at a past sequence, in stream order. `settledSeq`:
   * what the follower vouches for after it (K8S itself skips nothing, so by default the record's own).
   */
  apply(m: FollowedMessage, settledSeq = m.seq): void {
    const kind = objectSubjectKind(m.subject);
    const key = kind !== undefined && this.kinds.has(kind) ? parseObjectSubject(m.subject) : undefined;
    if (key) {
      const decoded = decodeObjectEvent(m.data);
      if (decoded.ok) {
        this.store(key, this.projected(key.kind, decoded.value, m.seq));
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
    this.settledSeq = Math.max(this.settledSeq, settledSeq);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w && w.seq <= this.settledSeq) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  /** An upsert as the view keeps it: projected when its reader declared the fields of its kind. */
  private projected(kind: string, event: ObjectEvent, seq: number): ObjectEvent | LiveRecord {
    const project = this.projections[kind];
    if (project === undefined || event.op !== 'upsert' || event.omitted) return event;
    return { ...event, object: project(event.object), seq, projected: true };
  }

  private store(key: ObjectKey, event: ObjectEvent | LiveRecord): void {
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

  private applyHeartbeat(m: FollowedMessage): void {
    const key = parseObjectSubject(m.subject);
    if (!key) return;
    const decoded = decodeObjectEvent(m.data);
    const renewTime = decoded.ok ? renewTimeOf(decoded.value.object) : undefined;
    if (renewTime !== undefined) this.renewals.set(fullKey(key), renewTime);
  }
  /** Checks the view's lag every `checkEveryMs` until stopped; restarts the followers when they stall. */
  private async followLag(jsm: JetStreamManager): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      await this.clock.sleep(this.lagPolicy.checkEveryMs, signal);
      if (signal.aborted) return;
      await this.checkLag(jsm);
      const nowMs = this.clock.monotonic();
      if (this.tracker.shouldRestart(nowMs)) {
        this.tracker.restarted(nowMs);
        this.log.warn({ ...this.freshness() }, 'view stalled: recreating its consumers');
        await Promise.all(
          this.followers.map(({ stream, follower }) =>
            follower
              .restart()
              .catch((err) => this.log.warn({ err, stream }, 'could not recreate a consumer')),
          ),
        );
      }
    }
  }

  /**
   * One question to the server: the last sequence of the stream behind each follower (K8S for
   * the latest-state mirror, which keeps K8S's sequences; an empty stream has nothing to reach).
   */
  private async checkLag(jsm: JetStreamManager): Promise<void> {
    const sentAtMs = this.clock.monotonic();
    let check: LagCheck;
    try {
      const infos = await withTimeout(
        Promise.all(this.followers.map(({ stream }) => jsm.streams.info(originOf(stream)))),
        Math.max(this.lagPolicy.checkEveryMs, 1_000),
      );
      const lastSeqs = infos.map((info) => (info.state.messages > 0 ? info.state.last_seq : 0));
      check = { answered: true, sentAtMs, lastSeqs };
    } catch (err) {
      check = { answered: false, sentAtMs, error: err instanceof Error ? err.message : String(err) };
    }
    this.tracker.record(check);
    this.progressed();
    const lag = this.tracker.lag(this.clock.monotonic());
    this.followers.forEach(({ stream }, i) => {
      if (check.answered) this.pending.set(stream, Math.max(0, (check.lastSeqs[i] ?? 0) - this.appliedOf(i)));
    });
    this.logTransition(lag);
    for (const listener of this.freshnessListeners) listener(lag);
  }

  /** A record that reaches the bus's last answer confirms the view at once, not at the next check. */
  private settleOpenQuestion(): void {
    if (!this.tracker.wouldSettle(this.followers.map((_, i) => this.appliedOf(i)))) return;
    this.progressed();
    const lag = this.tracker.lag(this.clock.monotonic());
    this.logTransition(lag);
    for (const listener of this.freshnessListeners) listener(lag);
  }

  private appliedOf(follower: number): number {
    return this.followers[follower]?.follower.handedSeq ?? 0;
  }

  /** Tells the tracker what the followers applied; called per check, and per record while a question is open. */
  private progressed(): void {
    this.tracker.progress(
      this.followers.map((_, i) => this.appliedOf(i)),
      this.clock.monotonic(),
    );
  }

  private logTransition(lag: ViewLag): void {
    if (lag.state === this.lastState) return;
    const previous = this.lastState;
    this.lastState = lag.state;
    if (lag.state === 'current') {
      if (previous !== undefined)
        this.log.info({ viewSeq: this.settledSeq, readSeq: this.appliedSeq }, 'view current again');
      return;
    }
    this.log.warn(
      {
        state: lag.state,
        behindBy: lag.behindBy,
        viewSeq: this.settledSeq,
        readSeq: this.appliedSeq,
        reason: lag.reason,
      },
      'view is not current: decisions that need the present state wait',
    );
  }
}

/** The stream whose sequences a followed stream carries: the mirror's origin, or itself. */
function originOf(stream: string): string {
  return stream === STREAMS.latest ? STREAMS.records : stream;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  // The question given up on may still fail later (the client's own request timeout, 5 s): that
  // is expected, and left unhandled it would end the process (it did, in the demo).
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** How long a decision waits for its view by default: below every concern's ack wait (30 s), so the item is handed back in time. */
const DEFAULT_WAIT_MS = 10_000;

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
