// What a handler concern registers so the router and resync can serve it without knowing it by
// name: what a recorded change wakes (its pure trigger function), where its work goes, and
// every key it owns. Each concern has one (src/handlers/<concern>/wakes.ts); concerns.ts lists
// them; the router loops over that list (controller-runtime's `Watches(…,
// EnqueueRequestsFromMapFunc(…))`, one per controller), and enqueue-work.ts is the one way any
// of them, or a handler, publishes work.
import type { z } from 'zod';
import type { RecordedObject, WorkItem } from '../bus/messages.ts';
import type { HandlerConsumerSpec } from '../bus/runtime/index.ts';
import { STREAMS } from '../bus/topology.ts';
import type { ObjectView } from '../bus/view.ts';
import type { Config } from '../config/schema.ts';
import { ASSIGN_WORLD_KINDS, type AssignWorld, assignWorldOf } from './assign/world.ts';

export type Partitions = Config['bus']['partitions'];

/** One recorded change as a concern's trigger function reads it. */
export interface RoutedChange {
  change: { kind: string; op: 'upsert' | 'delete'; object: RecordedObject };
  /** The object as its previous record had it; undefined when absent before (or history aged out). */
  previous: RecordedObject | undefined;
  /** The configs and instances as the view holds them, once the view has reached the record. */
  world: AssignWorld;
  view: Pick<ObjectView, 'list'>;
}

/** What the router's view holds: the configs and instances every trigger function reads. */
export const ROUTED_VIEW_KINDS: readonly string[] = ASSIGN_WORLD_KINDS;

/**
 * A change ready to route. The world is read from the view once, on the first concern that asks,
 * however many concerns read it (a fleet's configs are many, and every record is routed).
 */
export function routedChangeOf(
  change: RoutedChange['change'],
  previous: RecordedObject | undefined,
  view: Pick<ObjectView, 'list'>,
): RoutedChange {
  let world: AssignWorld | undefined;
  return {
    change,
    previous,
    view,
    get world() {
      world ??= assignWorldOf(view);
      return world;
    },
  };
}

/** One key a change wakes. */
export interface Wake {
  key: string;
  /** Through the concern's paced fan-out rather than straight to its work subject. */
  paced?: true;
  /** What woke it, when not the change itself (`echo`: the record of the concern's own status write). */
  cause?: string;
}

export interface ConcernWork<T extends WorkItem = WorkItem> {
  /** The concern's name: its work subjects, message ids, consumers and logs. */
  concern: string;
  /** What its work item carries: the work item, or one with fields of the concern's own. */
  schema: z.ZodType<T>;
  /** Which of the bus's partition counts (`bus.partitions.*`) its work subjects are hashed into. */
  partitionsOf: keyof Partitions;
  /** Its partitioned consumers on WORK for `partitions` (docs/bus.md): one key at a time, fleet-wide. */
  consumers(partitions: number): HandlerConsumerSpec;
  /** `work.<concern>.<partition>.<key…>`: where one key's work goes. */
  workSubject(key: string, partitions: number): string;
  /** Where a paced key waits for the concern's pacer; only a concern whose wakes can be paced has one. */
  fanoutSubject?(key: string): string;
  /** What a recorded change wakes: pure, so a test or `replay` reproduces it. */
  wakes(routed: RoutedChange): Wake[];
  /** Every key of the concern as the view holds it, for its resync rounds (resync.ts). */
  resyncKeys(view: Pick<ObjectView, 'list'>): string[];
  /** The fields a log line about one key names it by: `target`, `config` or `instance`. */
  logFieldsOf(key: string): Record<string, string>;
}

/**
 * A concern's partitioned consumers on WORK. ack_wait bounds failover after a crash, not how long
 * a handler may run (the runtime confirms progress): 30 s unless its work holds longer writes.
 */
export function workConsumers(concern: string, partitions: number, ackWaitMs = 30_000): HandlerConsumerSpec {
  return {
    mode: 'partitioned',
    stream: STREAMS.work,
    durable: concern,
    prefix: `work.${concern}`,
    partitions,
    ackWaitMs,
    maxDeliver: 10,
  };
}
