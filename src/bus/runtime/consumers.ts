/**
 * The durable pull consumers a handler concern needs, as data, plus the one
 * place that (re)creates them. Two shapes:
 *
 * - **shared**: one durable with a filter subject; every replica pulls from it
 *   and the server hands each message to one of them (horizontal scale, no key
 *   affinity). `maxAckPending` caps in-flight work across the whole fleet.
 * - **partitioned**: publishers put a key on `<prefix>.<partition>.<key…>`
 *   (partition = FNV-1a-32(key) mod N, see `partition.ts`); there is one durable
 *   per partition, filtered on `<prefix>.<p>.>`, with `max_ack_pending: 1`, and
 *   every replica pulls from every partition. The server never has two
 *   unacknowledged messages of one partition out at once, so two replicas never
 *   work on one key at the same time — whatever the replica count, with no
 *   membership protocol. Parallelism is N; the price is head-of-line blocking
 *   inside a partition while a message runs (a retry that would wait ½ s or
 *   more goes off the consumer as a schedule, `settlement.ts`). Coalescing by `max_msgs_per_subject: 1` must NOT be combined with
 *   this: on 2.9 replacing an in-flight message frees its ack slot (notes §0.3).
 *
 * `max_deliver` on the server is the handler's attempt budget plus
 * {@link DEAD_LETTER_SPARE_DELIVERIES}: the runtime dead-letters on the last
 * *handler* attempt itself, and the spare deliveries let a message whose
 * worker died on that last attempt still be dead-lettered (with kind
 * `max-deliver`) by another replica instead of being dropped silently by the
 * server.
 *
 * These consumers are meant for WorkQueue (or Interest) work streams: when a
 * consumer is recreated after deletion it starts from `deliver_policy: all`,
 * which on a WorkQueue stream is exactly "every message not yet done".
 */
import {
  AckPolicy,
  type ConsumerConfig,
  DeliverPolicy,
  type JetStreamManager,
  ReplayPolicy,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { isConsumerAlreadyExists } from '../errors.ts';
import { MIN_ACK_WAIT_MS } from './lease.ts';
import { partitionConsumerName, partitionFilter } from './partition.ts';

/** Deliveries the server allows beyond the handler's attempts, for dead-lettering after a crash. */
export const DEAD_LETTER_SPARE_DELIVERIES = 2;

export type HandlerConsumerSpec = {
  stream: string;
  /** Durable name; partition consumers are named `<durable>-p<p>`. */
  durable: string;
  /**
   * How long the server waits for an ack before redelivering to another
   * replica. The runtime confirms progress every ackWait/3 while a handler runs
   * (see `lease.ts`), so this bounds failover after a crash or a stall, not
   * handler duration (`handlerTimeoutMs` does). At least 3 s.
   */
  ackWaitMs: number;
  /** Handler attempts before a message is dead-lettered. */
  maxDeliver: number;
  /**
   * For a stream of records rather than work: a message whose budget ran out on bus failures is
   * republished only while it is still its subject's latest (`settle-actions.ts`).
   */
  republishWhileLatest?: boolean;
} & (
  | {
      mode: 'shared';
      filterSubject: string;
      /** Fleet-wide cap on unacknowledged messages (server default 1000). */
      maxAckPending?: number;
    }
  | {
      mode: 'partitioned';
      /** Subjects are `<prefix>.<partition>.<key…>`. */
      prefix: string;
      partitions: number;
    }
);

export interface PlannedConsumer {
  stream: string;
  name: string;
  /** Partition index, or undefined for a shared consumer. */
  partition: number | undefined;
  config: Partial<ConsumerConfig> & { durable_name: string };
}

export function planHandlerConsumers(spec: HandlerConsumerSpec): PlannedConsumer[] {
  if (!Number.isInteger(spec.maxDeliver) || spec.maxDeliver < 1) {
    throw new Error(`maxDeliver must be a positive integer, got ${spec.maxDeliver}`);
  }
  if (!(spec.ackWaitMs >= MIN_ACK_WAIT_MS)) {
    throw new Error(`ackWaitMs must be at least ${MIN_ACK_WAIT_MS}, got ${spec.ackWaitMs}`);
  }
  const base = {
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    replay_policy: ReplayPolicy.Instant,
    ack_wait: nanos(spec.ackWaitMs),
    max_deliver: spec.maxDeliver + DEAD_LETTER_SPARE_DELIVERIES,
  };
  if (spec.mode === 'shared') {
    return [
      {
        stream: spec.stream,
        name: spec.durable,
        partition: undefined,
        config: {
          ...base,
          durable_name: spec.durable,
          filter_subject: spec.filterSubject,
          ...(spec.maxAckPending === undefined ? {} : { max_ack_pending: spec.maxAckPending }),
        },
      },
    ];
  }
  if (!Number.isInteger(spec.partitions) || spec.partitions < 1) {
    throw new Error(`partitions must be a positive integer, got ${spec.partitions}`);
  }
  return Array.from({ length: spec.partitions }, (_, p) => {
    const name = partitionConsumerName(spec.durable, p);
    return {
      stream: spec.stream,
      name,
      partition: p,
      config: {
        ...base,
        durable_name: name,
        filter_subject: partitionFilter(spec.prefix, p),
        max_ack_pending: 1,
      },
    };
  });
}

/**
 * Creates the consumer, or brings an existing one to this config. On 2.9 `add`
 * of an existing durable silently updates it; 2.10+ refuses with 10148, so fall
 * back to `update` there.
 */
export async function ensureConsumer(jsm: JetStreamManager, planned: PlannedConsumer): Promise<void> {
  try {
    await jsm.consumers.add(planned.stream, planned.config);
  } catch (err) {
    if (!isConsumerAlreadyExists(err)) throw err;
    const { durable_name: _d, deliver_policy: _p, filter_subject: _f, ...updatable } = planned.config;
    await jsm.consumers.update(planned.stream, planned.name, updatable);
  }
}
