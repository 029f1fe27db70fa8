// The handover's repoint Events, one per destination and verdict over a short window instead of
// one per target: a rebalance repoints hundreds of targets onto one instance within seconds, and
// an Event each was as many apiserver writes as the moves' status writes (BENCHMARKS.md, "Scale").
// The Event is about the destination instance (cluster-scoped: namespace `default`); each config's
// own HandoverReady condition says, for that target, how it came to name its instance.
//
// Events are discardable (kube/event-recorder.ts): a batch not yet recorded when the process dies
// is lost, never a write or a verdict.
import { API_VERSION, webhookServiceName } from '../../api/constants.ts';
import { WEBHOOK_SERVER_KIND } from '../../api/webhook-server.ts';
import { type RepointDone, repointBatchEvent } from '../../core/transition-events.ts';
import type { EventSink } from '../../kube/event-recorder.ts';

/** How long a batch gathers repoints after its first. */
export const REPOINT_EVENT_WINDOW_MS = 5_000;

interface Batch {
  first: { target: string; readVersion: string };
  repoints: RepointDone[];
}

export class RepointEvents {
  private readonly batches = new Map<string, Batch>();
  private readonly sink: EventSink;
  private readonly windowMs: number;

  constructor(sink: EventSink, windowMs = REPOINT_EVENT_WINDOW_MS) {
    this.sink = sink;
    this.windowMs = windowMs;
  }

  /** A repoint onto `instance`, made on the target's `readVersion`; recorded with its batch. */
  add(instance: string, readVersion: string, repoint: RepointDone): void {
    const key = `${instance}\n${repoint.reason}`;
    const batch = this.batches.get(key);
    if (batch) {
      batch.repoints.push(repoint);
      return;
    }
    this.batches.set(key, { first: { target: repoint.target, readVersion }, repoints: [repoint] });
    setTimeout(() => this.flush(key, instance, repoint.reason), this.windowMs).unref();
  }

  private flush(key: string, instance: string, reason: string): void {
    const batch = this.batches.get(key);
    if (!batch) return;
    this.batches.delete(key);
    this.sink.record({
      regarding: { apiVersion: API_VERSION, kind: WEBHOOK_SERVER_KIND, name: instance },
      ...repointBatchEvent({
        instance,
        service: webhookServiceName(instance),
        reason,
        repoints: batch.repoints,
        first: batch.first,
      }),
    });
  }
}
