import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { decodeMessage, type ObjectEvent, objectEventSchema } from './messages.ts';
import { type ObjectKey, parseObjectSubject } from './subjects.ts';
import { STREAMS } from './topology.ts';

interface SeqWaiter {
  seq: number;
  resolve: () => void;
}

/**
 * A handler's in-memory index of recorded objects, rebuilt from the K8S
 * stream at start (the last event per subject) and then followed live.
 *
 * A decision must never be made on state older than its cause: a handler
 * woken by stream sequence N calls `waitFor(N)` before reading. The view reads
 * the whole record stream (`k8s.>`), keeping only the kinds it was asked for,
 * so every sequence number of the stream passes through it and `waitFor` can
 * tell exactly when it has caught up.
 */
export class ObjectView {
  private readonly objects = new Map<string, Map<string, ObjectEvent>>();
  private readonly waiters: SeqWaiter[] = [];
  private appliedSeq = 0;
  private stopped = false;
  private stopFn: (() => void) | undefined;
  private readonly kinds: ReadonlySet<string>;
  private readonly log: Logger;

  constructor(kinds: readonly string[], log: Logger) {
    this.kinds = new Set(kinds);
    this.log = log;
  }

  /** Starts following the stream; resolves once the view holds everything recorded before the call. */
  async start(js: JetStreamClient, jsm: JetStreamManager): Promise<void> {
    const { state } = await jsm.streams.info(STREAMS.records);
    const consumer = await js.consumers.get(STREAMS.records, {
      filter_subjects: 'k8s.>',
      deliver_policy: DeliverPolicy.LastPerSubject,
    });
    const messages = await consumer.consume();
    this.stopFn = () => void messages.stop();
    void (async () => {
      for await (const m of messages) this.apply(m.subject, m.seq, m.data);
    })().catch((err) => {
      if (!this.stopped) this.log.error({ err }, 'view stopped following the stream');
    });
    await this.waitFor(state.last_seq);
  }

  stop(): void {
    this.stopped = true;
    this.stopFn?.();
  }

  get sequence(): number {
    return this.appliedSeq;
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

  /** The live objects of a kind (deleted ones are gone). */
  list(kind: string): ObjectEvent['object'][] {
    return [...(this.objects.get(kind)?.values() ?? [])]
      .filter((e) => e.op === 'upsert')
      .map((e) => e.object);
  }

  get(key: ObjectKey): ObjectEvent['object'] | undefined {
    const event = this.objects.get(key.kind)?.get(`${key.namespace}/${key.name}`);
    return event?.op === 'upsert' ? event.object : undefined;
  }

  /** The last recorded event of an object, tombstones included (what a watcher resumes from). */
  lastEvent(key: ObjectKey): ObjectEvent | undefined {
    return this.objects.get(key.kind)?.get(`${key.namespace}/${key.name}`);
  }

  events(kind: string): ObjectEvent[] {
    return [...(this.objects.get(kind)?.values() ?? [])];
  }

  private apply(subject: string, seq: number, data: Uint8Array): void {
    const key = parseObjectSubject(subject);
    if (key && this.kinds.has(key.kind)) {
      const decoded = decodeMessage(objectEventSchema, data);
      if (decoded.ok) {
        let byName = this.objects.get(key.kind);
        if (!byName) {
          byName = new Map();
          this.objects.set(key.kind, byName);
        }
        byName.set(`${key.namespace}/${key.name}`, decoded.value);
      } else {
        // The recorder validated it on the way in; a record that fails here was
        // written by something else. Skip it, keep following.
        this.log.warn({ subject, seq, reason: decoded.reason }, 'skipping an invalid record');
      }
    }
    this.appliedSeq = Math.max(this.appliedSeq, seq);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i];
      if (w && w.seq <= this.appliedSeq) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }
}
