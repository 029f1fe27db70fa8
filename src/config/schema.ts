// The one schema for process configuration. Every key can come from the config
// file, the environment or a flag (src/config/load.ts derives the names), and
// docs/configuration.md is generated from the descriptions below (a unit test
// fails when they drift). To add a key: add it here with a default and a
// description that says what the number caps and at what scope — per process,
// per client, or across the whole fleet of replicas.
import { z } from 'zod';
import { MAX_RATE_PER_SECOND } from '../bus/pacer/slots.ts';
import type { ViewLagPolicy } from '../bus/view-lag.ts';

/**
 * Environment variables and flags are text: accept a numeric string where a
 * number is expected, and leave anything else for the number schema to reject
 * with its own message (never coerce "" or "abc" to 0 or NaN).
 */
function numeric<T extends z.ZodType<number>>(schema: T) {
  return z.preprocess(
    (value) =>
      typeof value === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(value)
        ? Number(value)
        : value,
    schema,
  );
}

const kubernetes = z
  .object({
    qps: numeric(z.number())
      .default(0)
      .describe(
        'Requests per second of the **writes** client (patches, applies, status, Lease writes), per process. ' +
          '≤ 0 (the default) installs an explicit no-op limiter: no client-side limit, API Priority and Fairness on the ' +
          'apiserver protects it. > 0 installs a token bucket in front of every request of the writes client only; the ' +
          'informers and events clients never take from it. With N replicas of a component the fleet may send N × qps.',
      ),
    burst: numeric(z.number().int().min(0))
      .default(0)
      .describe(
        'Token-bucket size of the writes client, per process: requests it may send at once after being idle. ' +
          'Only used when kubernetes.qps > 0; 0 means ceil(qps), one second’s worth. Fleet-wide: N × burst.',
      ),
    eventQPS: numeric(z.number())
      .default(200)
      .describe(
        'Kubernetes Events per second admitted by the **events** client’s recorder, per process (one recorder per ' +
          'process). Events beyond it are dropped and counted, never queued behind or delaying writes. ≤ 0 turns ' +
          'shedding off (the queue stays bounded by kubernetes.eventQueueSize). With N replicas the fleet may emit ' +
          'N × eventQPS.',
      ),
    eventBurst: numeric(z.number().int().min(0))
      .default(400)
      .describe(
        'Events admitted at once after a quiet period, per process (token-bucket size of the events client). ' +
          '0 means ceil(eventQPS). Fleet-wide: N × eventBurst.',
      ),
    eventQueueSize: numeric(z.number().int().min(1))
      .default(1000)
      .describe(
        'Admitted Events waiting to be sent, per process. When the apiserver is slower than the admitted rate the ' +
          'queue fills and further Events are dropped and counted; it bounds the recorder’s memory.',
      ),
  })
  .strict();

const nats = z
  .object({
    url: z
      .string()
      .min(1)
      .default('nats://127.0.0.1:4222')
      .describe('NATS server URL(s) of the JetStream bus, comma-separated for a cluster.'),
    user: z
      .string()
      .default('')
      .describe(
        'NATS user this process connects as: its component (`watchers`, `assign`, `webhook-server`, …), whose ' +
          'permissions are exactly its role’s (docs/install.md, “NATS users”). Empty: no credentials.',
      ),
    passwordFile: z
      .string()
      .default('')
      .describe(
        'File holding the password of nats.user (the mounted credentials Secret). Read at every connect and ' +
          'reconnect, so a rotated password is used without a restart.',
      ),
    webhookServerPasswordFile: z
      .string()
      .default('')
      .describe(
        'The instances handler only: file holding the password of the `webhook-server` user, which it renders ' +
          'into a Secret in each instance’s namespace for the replicas. Read at start. Empty: the replicas ' +
          'connect without credentials.',
      ),
    tls: z
      .object({
        caFile: z
          .string()
          .default('')
          .describe(
            'CA bundle (PEM) the NATS server’s certificate must chain to; the server’s host name (or IP) must be ' +
              'in its SANs. Set: TLS is required, and a server without TLS is refused. Read at every connect and ' +
              'reconnect, so a rotated bundle is used without a restart. Empty: the system’s CAs, and TLS only ' +
              'when a URL says `tls://` or the server requires it (docs/bus.md, “TLS to NATS”).',
          ),
        certFile: z
          .string()
          .default('')
          .describe(
            'Client certificate (PEM) presented to a NATS server that verifies clients (`verify: true`); with ' +
              'nats.tls.keyFile. Empty: none (the user and password authenticate).',
          ),
        keyFile: z.string().default('').describe('Private key (PEM) of nats.tls.certFile.'),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/**
 * The partitioned handler concerns (per-key serialization, `src/bus/runtime/`):
 * each one's partition count caps its throughput at about partitions ÷
 * (handler latency + a few ms), whatever the replica count (docs/bus.md).
 */
export const PARTITIONED_CONCERNS = [
  'assign',
  'leaseAggregate',
  'handover',
  'configStatus',
  'instances',
] as const;
export type PartitionedConcern = (typeof PARTITIONED_CONCERNS)[number];

function partitionCount(concern: string, serializes: string, count = 16, why = '') {
  return numeric(z.number().int().min(1).max(1024))
    .default(count)
    .describe(
      `Partitions of the ${concern} handler, fleet-wide: at most this many ${serializes} are handled at once, ` +
        'one per partition, whatever the replica count, so throughput ≈ partitions ÷ (handler latency + a few ms): ' +
        '16 partitions at 20 ms ≈ 600 msg/s. Replicas beyond the partition count add no throughput. Change it only ' +
        `with the concern’s WORK backlog drained: keys move between partitions.${why}`,
    );
}

const partitions = z
  .object({
    assign: partitionCount('assign', 'pools'),
    leaseAggregate: partitionCount('lease-aggregate', 'webhook servers'),
    handover: partitionCount(
      'handover',
      'targets',
      64,
      ' A move is two apiserver writes one after the other (the target, then its config’s status), ~0.2–1 s each ' +
        'while a rebalance loads the apiserver: 64 partitions keep up with the fan-out pace of 50 moves/s, 16 ' +
        'managed ~10 (BENCHMARKS.md, the scale scenario).',
    ),
    configStatus: partitionCount('config-status', 'configs'),
    instances: partitionCount('instances', 'webhook servers'),
  })
  .strict();

const bus = z
  .object({
    fanoutRatePerSecond: numeric(z.number().positive().max(MAX_RATE_PER_SECOND))
      .default(50)
      .describe(
        'Work items released per second when one instance change fans out to many configs. Fleet-wide: the pacer ' +
          'holds its tokens on the bus, so this is the total across all handler replicas, not per replica. At most ' +
          `${MAX_RATE_PER_SECOND}: a faster slot would be shorter than the millisecond clock.`,
      ),
    recordRetentionHours: numeric(z.number().positive())
      .default(24)
      .describe(
        'How long the record history (stream K8S, the flight recorder that `replay` reads) keeps every change, in ' +
          'hours; tombstones stay as long in the latest-state mirror (K8S_LATEST), which keeps live objects forever. ' +
          'A topology setting, one for every process: applied by `switchyard bus setup`, verified by the others.',
      ),
    duplicateWindowSeconds: numeric(z.number().int().min(1))
      .default(120)
      .describe(
        'Window in which the bus stores a repeated message id once (two watcher replicas recording one change, a ' +
          'retried publish), in seconds. A topology setting, one for every process, like bus.recordRetentionHours. ' +
          'Ordering does not depend ' +
          'on it: a record older than the stored one is refused whatever the window.',
      ),
    streamReplicas: numeric(z.literal([1, 3]))
      .default(1)
      .describe(
        'Replicas of every stream of the bus (K8S, its mirror K8S_LATEST, HEARTBEATS, WORK, FANOUT, DLQ, DECISIONS) ' +
          'and of every pacer’s slot bucket. 3 needs a JetStream cluster of at least 3 servers: the bus then ' +
          'survives losing one. A topology setting, one for every process, like bus.recordRetentionHours: ' +
          '`switchyard bus setup` applies it to what exists, a pacer creates a missing bucket with it; changing it ' +
          'on a live bus is docs/bus.md, “Replicated streams”.',
      ),
    partitions: partitions.prefault({}),
  })
  .strict();

const log = z
  .object({
    level: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('Log level of this process (pino levels).'),
    format: z
      .enum(['auto', 'json', 'pretty'])
      .default('auto')
      .describe(
        'How log lines look: JSON lines (level names, ISO times) for a collector, pretty lines for a person; ' +
          'auto is pretty when the log goes to a terminal, JSON otherwise (a Pod).',
      ),
  })
  .strict();

const admission = z
  .object({
    issueCertificate: flag(z.boolean())
      .default(true)
      .describe(
        'Whether `switchyard admission` issues its own serving certificate: a CA in the Secret ' +
          'switchyard-admission-ca, the certificate in switchyard-admission-tls, both renewed well before expiry, and ' +
          'the CA bundle patched into the ValidatingWebhookConfiguration switchyard-admission (docs/admission.md). ' +
          'Off: another issuer (cert-manager) writes switchyard-admission-tls and the caBundle; the process only ' +
          'reads the Secret. Either way it serves the Secret’s pair, re-read every 30 s, and is ready once it is valid.',
      ),
  })
  .strict();

// Defaults are DEFAULT_HANDOVER_POLICY's (src/core/handover.ts), where the reasoning behind them lives.
const handover = z
  .object({
    unreportedGraceSeconds: numeric(z.number().positive())
      .default(90)
      .describe(
        'How long a move waits while its destination has ready Pods and not one served-set Lease before it proceeds ' +
          'unverified (HandoverReady=True, reason HandoverUnverified), in seconds. Counts only time with ready Pods ' +
          'and no Lease; a truncated, undecodable or stale report never uses it up. One value for every process of ' +
          'the handover fleet: any replica resumes the same clock from the config’s status.handover.',
      ),
    confirmSeconds: numeric(z.number().min(0))
      .default(10)
      .describe(
        'How long every ready Pod of a move’s destination must go on reporting the target, the same Pods ready ' +
          'throughout, before the target is repointed, in seconds (0: at once). Covers a destination replica that ' +
          'died or hung just before the gate looked: its Lease stays live, and its endpoint ready until its ' +
          'readiness probe fails (6–9 s for a hung replica). Each verified move takes at least this long after assign ' +
          'records it. Counted from the latest recorded change of the destination’s EndpointSlices and ready Pods’ ' +
          'Leases, so every process of the handover fleet reads the same clock off the bus; one value for all of them.',
      ),
    stallAfterSeconds: numeric(z.number().positive())
      .default(600)
      .describe(
        'How long a move may wait before its HandoverReady reason becomes HandoverStalled (it keeps waiting), in ' +
          'seconds: one reason to alert on. One value for every process of the handover fleet, like ' +
          'handover.unreportedGraceSeconds.',
      ),
  })
  .strict();

/** The longest resync period: a timer beyond ~24.8 days would overflow, and a week is already rare. */
const WEEK_SECONDS = 7 * 24 * 3600;

const resync = z
  .object({
    periodSeconds: numeric(z.number().int().min(0).max(WEEK_SECONDS))
      .default(1800)
      .describe(
        'How often each handler concern reconciles every key of its concern again from its view (assign: every ' +
          'config and instance; lease-aggregate, instances: every instance; handover: every target a config ' +
          'claims; config-status: every config), in seconds, besides the round every replica runs at start. ' +
          'Heals what a lost, dead-lettered or wrongly decided work item left wrong. Fleet-wide: rounds fall on one grid ' +
          '(multiples of the period since the epoch), so the replicas of a concern run each round once between ' +
          'them; a round is skipped while an earlier one is still being released. 0: the start round only. One ' +
          'value for every replica of a concern.',
      ),
    ratePerSecond: numeric(z.number().positive().max(MAX_RATE_PER_SECOND))
      .default(50)
      .describe(
        'Resync work items released per second, per concern, fleet-wide (each concern’s resync has its own pacer ' +
          'and slot bucket on the bus). Not bus.fanoutRatePerSecond: a separate rate, so a round never queues in ' +
          'front of an instance change’s fan-out. A round of N keys takes N ÷ rate seconds to release (50,000 ' +
          'targets at 50/s: about 17 minutes); most of its items decide that nothing changed and write nothing. ' +
          'One value for every replica of a concern.',
      ),
  })
  .strict();

// Defaults are DEFAULT_VIEW_LAG_POLICY's (src/bus/view-lag.ts), where the reasoning behind them lives.
const view = z
  .object({
    checkEveryMilliseconds: numeric(z.number().int().min(100))
      .default(2_000)
      .describe(
        'How often every view (each worker’s and each webhook-server replica’s) asks the bus for the last sequence ' +
          'of each stream it follows, to know how far behind it is, in ms, per process: one stream-info request per ' +
          'followed stream (one or two) per check.',
      ),
    maxLagSeconds: numeric(z.number().positive())
      .default(6)
      .describe(
        'A view is current while it was confirmed, within this many seconds, to hold everything the bus held. ' +
          'Past it, a handler waits before deciding, a worker reports not ready, and a webhook-server replica ' +
          'publishes "cannot tell" in its served-set Lease and keeps every plan it holds (docs/reliability.md). ' +
          'Per process; keep it well below webhook.drainSeconds.',
      ),
    restartAfterSeconds: numeric(z.number().positive())
      .default(15)
      .describe(
        'A view that is behind the bus and applies nothing for this many seconds recreates its consumers, in ' +
          'case the NATS client’s own recovery stalled. Per process.',
      ),
  })
  .strict();

const watchers = z
  .object({
    discoverySeconds: numeric(z.number().int().min(1).max(WEEK_SECONDS))
      .default(30)
      .describe(
        'How often the watchers read API discovery for Crossplane’s group (apiextensions.crossplane.io), in ' +
          'seconds, per process, besides the read at start: Crossplane installed, upgraded or removed while they ' +
          'run is noticed within this long, without a restart. XRDs are recorded at v2 where it is served, else ' +
          'at v1 (docs/architecture.md, “One catalog of kinds”). Each read is one to four small requests.',
      ),
  })
  .strict();

/** Environment variables and flags are text: "true" and "false" are the booleans they spell. */
function flag<T extends z.ZodBoolean>(schema: T) {
  return z.preprocess((value) => (value === 'true' ? true : value === 'false' ? false : value), schema);
}

const webhook = z
  .object({
    drainSeconds: numeric(z.number().min(0))
      .default(30)
      .describe(
        'How long a webhook-server replica keeps a plan after a current view first showed that the target no ' +
          'longer names this instance and is assigned elsewhere, in seconds, per replica. The target leaves the ' +
          'replica’s Lease within 5 s (a set that only shrank waits at most that long for more); the plan is dropped only once that evidence, the Lease’s silence about the ' +
          'target and the last review it served are each this old, and never while the view is behind the bus. ' +
          'The apiserver keeps calling the old Service for a moment after a repoint: requests already sent, and the ' +
          'old storage of the resource converting events for open watches until it is torn down. Cover the longest ' +
          'conversion request the apiserver may still have in flight, and keep it well above view.maxLagSeconds. ' +
          'Per process: every replica drains on its own clock.',
      ),
    unsafeDropPlanOnReassign: flag(z.boolean())
      .default(false)
      .describe(
        'Test only; never set it in a cluster. true makes a webhook-server replica drop a target’s plan as soon as ' +
          'the resolver assigns the target elsewhere, although the target’s conversion still names this instance: ' +
          'the apiserver keeps calling it until the handover repoints, and those conversions fail. It is the failure ' +
          'the hold-while-named rule prevents, switched on for the negative control of the end-to-end move test.',
      ),
  })
  .strict();

export const configSchema = z
  .object({
    kubernetes: kubernetes.prefault({}),
    nats: nats.prefault({}),
    bus: bus.prefault({}),
    log: log.prefault({}),
    admission: admission.prefault({}),
    handover: handover.prefault({}),
    resync: resync.prefault({}),
    view: view.prefault({}),
    watchers: watchers.prefault({}),
    webhook: webhook.prefault({}),
  })
  .strict();

export type Config = z.infer<typeof configSchema>;
export type KubernetesConfig = Config['kubernetes'];

/** The view-lag policy a process's views run with (bus/view-lag.ts). */
export function viewLagPolicyOf(config: Config['view']): ViewLagPolicy {
  return {
    checkEveryMs: config.checkEveryMilliseconds,
    maxLagMs: config.maxLagSeconds * 1000,
    restartAfterMs: config.restartAfterSeconds * 1000,
  };
}

/** The configuration with every default: what a process runs with when nothing is set. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}
