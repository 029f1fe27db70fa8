// The account of a replica killed while the target names its instance (the source of a move):
// what Kubernetes' data path fails, and when. The apiserver sends each conversion to one ready
// endpoint of the Service and never retries one that failed in transit, so the calls that reach
// the killed Pod fail until its endpoint is withdrawn, whatever a webhook server does
// (docs/limitations.md). A case that kills one cannot claim 0 failures; it claims, and checks:
//
//   * every failed request of the window is one the kill explains
//     (src/scenario/killed-replica-failures.ts: a transport failure naming the killed Pod's
//     endpoint address, or a connection to its Service closed under a call with no answer, while
//     no other replica of the instance died), and happened between the kill and WITHDRAWN_BOUND_MS
//     after its endpoint left the EndpointSlices;
//   * the apiserver counted no failed conversion between the window's opening and the kill, nor
//     after that bound: its counter is sampled every SAMPLE_MS from just before the kill until a
//     sample starts past the bound, and the window's last count must equal that sample's.
//
// So "holds no conversion plan", a 4xx, a hung replica's timeout, a wrong value, or one failed
// conversion once the endpoint has been gone a while, still fails the case.
import {
  DiscoveryV1Api,
  type KubeConfig,
  type V1Endpoint,
  type V1EndpointSlice,
} from '@kubernetes/client-node';
import { apiserverConversions, totalOf } from '../../../src/scenario/apiserver-conversions.ts';
import type { Failure } from '../../../src/scenario/conversion-load.ts';
import { type KilledReplica, killedReplicaFailure } from '../../../src/scenario/killed-replica-failures.ts';

/** How often the apiserver's conversion count and the EndpointSlices are read after the kill. */
export const SAMPLE_MS = 250;
/**
 * How long after the killed Pod's endpoint left the EndpointSlices a failure is still the kill's:
 * the apiserver's own EndpointSlice informer has to see the deletion before its resolver stops
 * picking the address (milliseconds on a quiet machine; several seconds allowed for two cores
 * shared with other work). A call already dialed fails at once (refused, reset).
 */
export const WITHDRAWN_BOUND_MS = 5_000;
/** Sampling stops this long after the kill if the endpoint never goes, twice that in any case (each a violation). */
const GIVE_UP_MS = 60_000;

export interface Sample {
  /** When the reads began and ended, on the load's clock. */
  startedMs: number;
  atMs: number;
  /** The target's failed conversions as the apiserver counts them since it started. */
  failed: number;
  /** The killed Pod is still listed as a ready endpoint of its Service. */
  listed: boolean;
}

/** What the watch saw, on the load's clock. */
export interface KilledReplicaObserved extends KilledReplica {
  pod: string;
  killedAtMs: number;
  /** The failed count read right before the kill. */
  failedAtKill: number;
  /** The end of the first sample after the kill that no longer listed the Pod. */
  withdrawnAtMs: number | undefined;
  samples: Sample[];
  /** Every other replica of the instance was still the process it was at the kill, at the last sample. */
  othersAlive: boolean;
}

export class KilledReplicaWatch {
  private readonly samples: Sample[] = [];
  private killedAtMs = 0;
  private withdrawnAtMs: number | undefined;
  private loop: Promise<void> | undefined;
  private readonly opts: WatchOptions;
  private readonly replica: KilledReplica;
  private readonly failedAtKill: number;

  private constructor(opts: WatchOptions, replica: KilledReplica, failedAtKill: number) {
    this.opts = opts;
    this.replica = replica;
    this.failedAtKill = failedAtKill;
  }

  /** Reads the Pod's endpoint addresses and the failed count: call right before the kill. */
  static async before(opts: WatchOptions): Promise<KilledReplicaWatch> {
    const addresses = endpointAddresses(await slicesOf(opts), opts.pod);
    if (addresses.length === 0)
      throw new Error(`${opts.pod} is not a ready endpoint of ${opts.service}: nothing to account for`);
    const failed = await failedConversions(opts);
    return new KilledReplicaWatch(
      opts,
      { addresses, serviceHost: `${opts.service}.${opts.namespace}.svc` },
      failed,
    );
  }

  /** Call right before the kill (the SIGKILL is its first step): its time, and sampling starts. */
  killing(): void {
    this.killedAtMs = this.opts.clock();
    this.loop = this.sampleUntilBound();
  }

  /** Waits for the sampling to end (a sample past the bound, or the give-up time) and returns what it saw. */
  async finish(): Promise<KilledReplicaObserved> {
    await this.loop;
    return {
      ...this.replica,
      pod: this.opts.pod,
      killedAtMs: this.killedAtMs,
      failedAtKill: this.failedAtKill,
      withdrawnAtMs: this.withdrawnAtMs,
      samples: this.samples,
      othersAlive: this.opts.othersAlive(),
    };
  }

  private async sampleUntilBound(): Promise<void> {
    for (;;) {
      const startedMs = this.opts.clock();
      const sample = await this.sample(startedMs).catch(() => undefined);
      if (sample) {
        this.samples.push(sample);
        if (!sample.listed && this.withdrawnAtMs === undefined) this.withdrawnAtMs = sample.atMs;
        if (this.withdrawnAtMs !== undefined && startedMs >= this.withdrawnAtMs + WITHDRAWN_BOUND_MS) return;
      }
      const sinceKillMs = this.opts.clock() - this.killedAtMs;
      if ((this.withdrawnAtMs === undefined && sinceKillMs > GIVE_UP_MS) || sinceKillMs > 2 * GIVE_UP_MS)
        return;
      await sleep(Math.max(0, SAMPLE_MS - (this.opts.clock() - startedMs)));
    }
  }

  private async sample(startedMs: number): Promise<Sample> {
    const [failed, slices] = await Promise.all([failedConversions(this.opts), slicesOf(this.opts)]);
    return {
      startedMs,
      atMs: this.opts.clock(),
      failed,
      listed: endpointAddresses(slices, this.opts.pod).length > 0,
    };
  }
}

export interface WatchOptions {
  kc: KubeConfig;
  target: string;
  namespace: string;
  /** The Service of the killed Pod's instance. */
  service: string;
  pod: string;
  /** The load's clock: failures are timed on it. */
  clock: () => number;
  /** Every other replica of the instance is still the process it was at the kill. */
  othersAlive: () => boolean;
}

/** The account a case is judged by (see the top of this file). */
export interface KilledReplicaAccount {
  pod: string;
  addresses: readonly string[];
  killedAtMs: number;
  withdrawnAtMs: number | undefined;
  /** Failed requests of the window the kill explains, by how. */
  dialed: Failure[];
  cut: Failure[];
  /** Failed requests of the window it does not explain: each one fails the case. */
  unexplained: Failure[];
  /** Failed conversions the apiserver counted from the window's opening to the kill. */
  failedBeforeKill: number;
  /** A sample started past the bound (so the counts after it are known). */
  sampledPastBound: boolean;
  /** From the kill to the first sample that started past the bound. */
  failedInWindow: number;
  /** After that sample, to the window's close. */
  failedAfterBound: number;
  /** Each sample after the kill that saw the count rise: ms since the kill, failed since the kill. */
  rises: { sinceKillMs: number; failed: number }[];
  othersAlive: boolean;
}

/**
 * Judges the window's failed requests and the apiserver's counts against what the watch saw;
 * `failedAtOpen` and `failedAtClose` are the target's failed count when the window opened and
 * closed.
 */
export function accountFor(
  seen: KilledReplicaObserved,
  failures: readonly Failure[],
  failedAtOpen: number,
  failedAtClose: number,
): KilledReplicaAccount {
  const until = seen.withdrawnAtMs === undefined ? undefined : seen.withdrawnAtMs + WITHDRAWN_BOUND_MS;
  const dialed: Failure[] = [];
  const cut: Failure[] = [];
  const unexplained: Failure[] = [];
  for (const f of failures) {
    const how = killedReplicaFailure(f.message, seen);
    const inWindow = until !== undefined && f.atMs >= seen.killedAtMs && f.atMs <= until;
    if (how === 'dialed' && inWindow) dialed.push(f);
    else if (how === 'cut' && inWindow && seen.othersAlive) cut.push(f);
    else unexplained.push(f);
  }
  const pastBound = seen.samples.find((s) => until !== undefined && s.startedMs >= until);
  const lastInWindow = pastBound?.failed ?? failedAtClose;
  const rises: KilledReplicaAccount['rises'] = [];
  let previous = seen.failedAtKill;
  for (const s of seen.samples) {
    if (s.failed > previous)
      rises.push({ sinceKillMs: s.atMs - seen.killedAtMs, failed: s.failed - seen.failedAtKill });
    previous = s.failed;
  }
  return {
    pod: seen.pod,
    addresses: seen.addresses,
    killedAtMs: seen.killedAtMs,
    withdrawnAtMs: seen.withdrawnAtMs,
    dialed,
    cut,
    unexplained,
    failedBeforeKill: seen.failedAtKill - failedAtOpen,
    sampledPastBound: pastBound !== undefined,
    failedInWindow: lastInWindow - seen.failedAtKill,
    failedAfterBound: failedAtClose - lastInWindow,
    rises,
    othersAlive: seen.othersAlive,
  };
}

/** `host:port` of each ready endpoint of `pod` in `slices`. */
function endpointAddresses(slices: readonly V1EndpointSlice[], pod: string): string[] {
  return readyAddresses(slices, (e) => e.targetRef?.name === pod);
}

function readyAddresses(
  slices: readonly V1EndpointSlice[],
  which: (endpoint: V1Endpoint) => boolean,
): string[] {
  return slices.flatMap((slice) =>
    (slice.endpoints ?? [])
      .filter((e) => which(e) && e.conditions?.ready !== false)
      .flatMap((e) => e.addresses.flatMap((a) => (slice.ports ?? []).map((p) => `${a}:${p.port}`))),
  );
}

async function slicesOf(opts: WatchOptions): Promise<V1EndpointSlice[]> {
  return slicesOfService(opts.kc, opts.namespace, opts.service);
}

async function slicesOfService(
  kc: KubeConfig,
  namespace: string,
  service: string,
): Promise<V1EndpointSlice[]> {
  const list = await kc.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
    namespace,
    labelSelector: `kubernetes.io/service-name=${service}`,
  });
  return list.items;
}

async function failedConversions(opts: WatchOptions): Promise<number> {
  return totalOf(await apiserverConversions(opts.kc), [opts.target]).failed;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `host:port` of every ready endpoint of `service`. */
export async function serviceEndpoints(
  kc: KubeConfig,
  namespace: string,
  service: string,
): Promise<string[]> {
  return readyAddresses(await slicesOfService(kc, namespace, service), () => true);
}
