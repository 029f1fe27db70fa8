/**
 * What each component may do on NATS: one user per component, with exactly its
 * role's publish and subscribe permissions, derived from the same topology,
 * consumer plans and partition counts the components run with (so a new
 * consumer or a changed partition count changes its permission too).
 *
 * NATS authorizes by subject only, and JetStream's API is subjects too
 * (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` pulls, `$JS.ACK.<stream>.<consumer>.…`
 * acks), so "consumes its work" is "may pull from and ack on its own consumers".
 * A wildcard covers whole tokens only and a consumer's name is one token, so a
 * partitioned concern's consumers are listed one by one (`handover-p0` … `-p63`).
 *
 * Each user subscribes only under its own inbox prefix (`_INBOX.<user>.>`, the
 * connection's `inboxPrefix`, `src/bus/connect.ts`): JetStream answers every API
 * request and delivers every pulled message there, and no user can read another's.
 *
 * The roles, as the issue puts them: a watcher publishes records and cannot
 * consume work; a handler consumes its own work subject, publishes the work it
 * causes, and cannot publish records. What is wider than the role, and why:
 * - every component that keeps a view reads all of K8S_LATEST and HEARTBEATS
 *   (its view filters by kind in the process: one ordered consumer per stream), and
 *   K8S's records by sequence (a message get) to fill what a lagging view skipped;
 * - a re-check is a message schedule whose target the server does not check
 *   against the publisher's permissions: a handler can only schedule on
 *   `recheck.<its concern>.>`, but the schedule could name another concern's
 *   work subject. Work items are triggers, never commands (handlers are
 *   level-triggered), so the worst such a schedule does is wake a handler;
 * - the router republishes a record to its own subject when routing failed on
 *   bus errors only, and only while it is the subject's latest record
 *   (`runtime/republish.ts`): it may publish on `k8s.>`;
 * - `switchyard dlq` (an operator's command, user `dlq`) re-drives a dead letter to its original
 *   work subject: it may publish on all of `work.>` (a wake-up of any handler, like the router's)
 *   and checks in code that the subject is one a handler consumes.
 */
import { inboxPrefixOf } from '../bus/inbox.ts';
import { pacerConsumers } from '../bus/pacer/pacer.ts';
import { type HandlerConsumerSpec, planHandlerConsumers } from '../bus/runtime/index.ts';
import { RENEWED_KINDS } from '../bus/subjects.ts';
import { bucketStream, STREAMS } from '../bus/topology.ts';
import type { Config } from '../config/schema.ts';
import { ASSIGN_WORK } from '../handlers/assign/wakes.ts';
import { ASSIGN_VIEW_KINDS } from '../handlers/assign/world.ts';
import { ASSIGN_PACER } from '../handlers/assign.ts';
import { ROUTED_VIEW_KINDS } from '../handlers/concern.ts';
import { CONFIG_STATUS_WORK } from '../handlers/config-status/wakes.ts';
import { CONFIG_STATUS_VIEW_KINDS } from '../handlers/config-status.ts';
import { HANDOVER_WORK } from '../handlers/handover/wakes.ts';
import { HANDOVER_VIEW_KINDS } from '../handlers/handover.ts';
import { INSTANCES_WORK } from '../handlers/instances/wakes.ts';
import { INSTANCES_VIEW_KINDS } from '../handlers/instances.ts';
import { LEASE_AGGREGATE_WORK } from '../handlers/lease-aggregate/wakes.ts';
import { LEASE_AGGREGATE_VIEW_KINDS } from '../handlers/lease-aggregate.ts';
import { PACER_BUCKETS } from '../handlers/pacer-buckets.ts';
import { resyncPacerOf } from '../handlers/resync.ts';
import { ROUTER_CONSUMER } from '../handlers/router.ts';
import { REPLICA_VIEW_KINDS } from '../webhook/world.ts';

export const NATS_IDENTITIES = [
  'bus-setup',
  'watchers',
  'router',
  'assign',
  'lease-aggregate',
  'handover',
  'config-status',
  'instances',
  'webhook-server',
  'dlq',
  'replay',
  'explain',
] as const;
export type NatsIdentity = (typeof NATS_IDENTITIES)[number];

/**
 * Users of commands an operator runs by hand, never a workload of deploy/: their passwords are in
 * the credentials Secret like every other, but no Pod mounts them.
 */
export const NATS_OPERATOR_IDENTITIES: readonly NatsIdentity[] = ['dlq', 'replay', 'explain'];

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

const API = '$JS.API';

/** Every process checks the server and the topology at start (`connectBus`, `verifyTopology`). */
function verifyTopology(): string[] {
  return [`${API}.INFO`, ...Object.values(STREAMS).map((s) => `${API}.STREAM.INFO.${s}`)];
}

/** Pull and settle on durable consumers it owns, and (re)create them from its plan. */
function consumeFrom(spec: HandlerConsumerSpec): string[] {
  return planHandlerConsumers(spec).flatMap(({ stream, name }) => [
    `${API}.CONSUMER.CREATE.${stream}.${name}`,
    `${API}.CONSUMER.CREATE.${stream}.${name}.>`,
    `${API}.CONSUMER.INFO.${stream}.${name}`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.${name}`,
    `$JS.ACK.${stream}.${name}.>`,
  ]);
}

/** Ordered consumers on a stream, any filter: what a view or a record lookup reads with. */
function readWithOrderedConsumers(stream: string): string[] {
  return [
    // An ordered consumer with several filters is created without a name in the subject.
    `${API}.CONSUMER.CREATE.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.*`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.*`,
    `${API}.CONSUMER.DELETE.${stream}.*`,
  ];
}

/**
 * What an `ObjectView` of `kinds` reads: the latest record of every object, the history's
 * records by sequence when it fell behind and the latest lost some, or when it reads a projected
 * object whole again (a message get: no consumer on K8S, where the router's is), the latest of
 * one subject when the history no longer has it (a direct get), and renewals if it holds Leases.
 */
function keepView(kinds: readonly string[]): string[] {
  const renewals = kinds.some((kind) => RENEWED_KINDS.includes(kind))
    ? readWithOrderedConsumers(STREAMS.heartbeats)
    : [];
  return [
    ...readWithOrderedConsumers(STREAMS.latest),
    `${API}.STREAM.MSG.GET.${STREAMS.records}`,
    `${API}.DIRECT.GET.${STREAMS.latest}.>`,
    ...renewals,
  ];
}

/** A record by sequence or the latest of a subject, exactly (`record-writer.ts`, the router's previous record). */
function getRecords(): string[] {
  return [
    `${API}.STREAM.MSG.GET.${STREAMS.records}`,
    `${API}.DIRECT.GET.${STREAMS.latest}`,
    `${API}.DIRECT.GET.${STREAMS.latest}.>`,
  ];
}

/** The runtime republishes a message to its own subject after bus failures (`runtime/republish.ts`). */
function republishOwn(spec: HandlerConsumerSpec): string[] {
  return [spec.mode === 'partitioned' ? `${spec.prefix}.>` : spec.filterSubject];
}

/** A handler concern: its consumers, its re-checks, its dead letters and the republish of its own work. */
function handleConcern(concern: string, spec: HandlerConsumerSpec): string[] {
  // Only WORK holds re-checks: a schedule fires onto its own stream (`runtime/recheck.ts`).
  const rechecks = spec.stream === STREAMS.work ? [`recheck.${concern}.>`] : [];
  return [...consumeFrom(spec), ...republishOwn(spec), ...rechecks, `dlq.${concern}`];
}

/** A pacer's slot bucket: created if missing, read and written (`src/bus/pacer/`). */
function usePacerBucket(bucket: string): string[] {
  const stream = bucketStream(bucket);
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.STREAM.CREATE.${stream}`,
    `${API}.STREAM.UPDATE.${stream}`,
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
    `$KV.${bucket}.>`,
  ];
}

/**
 * A concern's resync (`handlers/resync.ts`): it publishes its rounds to its own fan-out subject,
 * runs the pacer that releases them (its durable, bucket and dead letters) into its own work.
 */
function resyncConcern(concern: string): string[] {
  const pacer = resyncPacerOf(concern);
  return [...handleConcern(pacer.concern, pacerConsumers(pacer)), ...usePacerBucket(pacer.bucket)];
}

function workOf(concern: string): string {
  return `work.${concern}.>`;
}

/** Where a concern records what it decided (`switchyard replay` reads it). */
function decisionsOf(concern: string): string {
  return `decision.${concern}.>`;
}

function publishFor(identity: NatsIdentity, config: Config): string[] {
  const p = config.bus.partitions;
  switch (identity) {
    case 'bus-setup':
      // The topology's owner, and what `bus stats` reads: every stream's and consumer's state.
      return [
        `${API}.INFO`,
        `${API}.STREAM.NAMES`,
        `${API}.STREAM.LIST`,
        `${API}.STREAM.INFO.*`,
        `${API}.CONSUMER.LIST.*`,
        `${API}.CONSUMER.NAMES.*`,
        ...Object.values(STREAMS).flatMap((s) => [`${API}.STREAM.CREATE.${s}`, `${API}.STREAM.UPDATE.${s}`]),
        // The pacers' slot buckets, which their pacers create: bus setup brings them to bus.streamReplicas.
        ...PACER_BUCKETS.map((bucket) => `${API}.STREAM.UPDATE.${bucketStream(bucket)}`),
      ];
    case 'watchers':
      return [
        ...verifyTopology(),
        'k8s.>',
        'hb.>',
        ...getRecords(),
        ...readWithOrderedConsumers(STREAMS.latest),
      ];
    case 'router':
      return [
        ...verifyTopology(),
        ...keepView(ROUTED_VIEW_KINDS),
        ...getRecords(),
        ...consumeFrom(ROUTER_CONSUMER),
        ...republishOwn(ROUTER_CONSUMER),
        'dlq.router',
        workOf('assign'),
        workOf('lease-aggregate'),
        workOf('instances'),
        workOf('handover'),
        workOf('config-status'),
        ASSIGN_PACER.filterSubject,
      ];
    case 'assign':
      return [
        ...verifyTopology(),
        ...keepView(ASSIGN_VIEW_KINDS),
        ...handleConcern('assign', ASSIGN_WORK.consumers(p.assign)),
        ...handleConcern(ASSIGN_PACER.concern, pacerConsumers(ASSIGN_PACER)),
        ...usePacerBucket(ASSIGN_PACER.bucket),
        ...resyncConcern('assign'),
        workOf('handover'),
        decisionsOf('assign'),
      ];
    case 'lease-aggregate':
      return [
        ...verifyTopology(),
        ...keepView(LEASE_AGGREGATE_VIEW_KINDS),
        ...handleConcern('lease-aggregate', LEASE_AGGREGATE_WORK.consumers(p.leaseAggregate)),
        ...resyncConcern('lease-aggregate'),
        workOf('handover'),
      ];
    case 'handover':
      return [
        ...verifyTopology(),
        ...keepView(HANDOVER_VIEW_KINDS),
        ...handleConcern('handover', HANDOVER_WORK.consumers(p.handover)),
        ...resyncConcern('handover'),
      ];
    case 'config-status':
      return [
        ...verifyTopology(),
        ...keepView(CONFIG_STATUS_VIEW_KINDS),
        ...handleConcern('config-status', CONFIG_STATUS_WORK.consumers(p.configStatus)),
        ...resyncConcern('config-status'),
      ];
    case 'instances':
      return [
        ...verifyTopology(),
        ...keepView(INSTANCES_VIEW_KINDS),
        ...handleConcern('instances', INSTANCES_WORK.consumers(p.instances)),
        ...resyncConcern('instances'),
        workOf('handover'),
      ];
    case 'webhook-server':
      return [...verifyTopology(), ...keepView(REPLICA_VIEW_KINDS)];
    case 'dlq':
      // `switchyard dlq`: read the dead letters one by one (no consumer), delete one once it was
      // re-driven, and re-drive it: publish to a work subject (it checks which; NATS cannot).
      return [
        `${API}.INFO`,
        `${API}.STREAM.INFO.${STREAMS.deadLetters}`,
        `${API}.STREAM.MSG.GET.${STREAMS.deadLetters}`,
        `${API}.STREAM.MSG.DELETE.${STREAMS.deadLetters}`,
        'work.>',
      ];
    case 'replay':
      // `switchyard replay`: read the recorded history and decisions, and re-drive what it replayed
      // as new work of the concerns that record decisions (`--redrive`).
      return [
        `${API}.INFO`,
        ...[STREAMS.records, STREAMS.latest, STREAMS.decisions].flatMap((stream) => [
          `${API}.STREAM.INFO.${stream}`,
          ...readWithOrderedConsumers(stream),
        ]),
        workOf('assign'),
      ];
    case 'explain':
      // `switchyard explain`: the handover's view (Leases and their renewals included), and nothing else.
      return [...verifyTopology(), ...keepView(HANDOVER_VIEW_KINDS)];
  }
}

/** The permissions of one component's user, for `config`'s partition counts. */
export function natsPermissions(identity: NatsIdentity, config: Config): NatsPermissions {
  return {
    publish: [...new Set(publishFor(identity, config))],
    subscribe: [`${inboxPrefixOf(identity)}.>`],
  };
}

export function isNatsIdentity(value: string): value is NatsIdentity {
  return (NATS_IDENTITIES as readonly string[]).includes(value);
}

/** The user a `switchyard <subcommand> …` process connects as. */
export function natsIdentityOf(args: readonly string[]): NatsIdentity {
  const [command, sub] = args;
  if (command === 'watch') return 'watchers';
  // `bus stats` reads what the topology's owner may read: every stream's and consumer's state.
  if (command === 'bus' && (sub === 'setup' || sub === 'stats')) return 'bus-setup';
  if (command !== undefined && isNatsIdentity(command)) return command;
  throw new Error(`switchyard ${args.join(' ')} has no NATS user of its own`);
}
