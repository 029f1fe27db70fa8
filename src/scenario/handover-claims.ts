// Whether a config's status ever claimed a verified move that its target CRD did not reflect:
// the continuous check of the randomized lifecycle test (issue 27, finding 6). It judges every
// version of every config the apiserver stored, against the CRD as it was at that version.
//
// Versions of different resources are put on one time line by their resourceVersion, which on
// a cluster of one etcd is etcd's revision, one counter for every object (the test's own
// cluster; Kubernetes asks clients to treat it as opaque, and nothing in Switchyard compares it).
//
// A True HandoverReady (FirstApply, NoMove, HandoverReady, HandoverUnverified) claims that the
// target's conversion names the instance the claim is about. At the version it is stored in:
//   * it is about the instance the status assigns (status.handoverDestination equals
//     status.assignedWebhookServer): otherwise the status says two things at once;
//   * the CRD names that instance's Service: not another Service, ever.
// One claim the handover cannot avoid making stale: the user deletes the CRD (and may create it
// again, a new incarnation that names nothing) after the handover read it. The claim is excused
// while the CRD is missing or names nothing, provided an incarnation deleted since the condition
// before this one was stated (the earliest the handover could have read the CRD for this claim)
// named the claim's instance. How long it may stay stale is not judged here: once the fleet is quiet
// the lifecycle test requires TargetNotFound for a missing target and the True verdict again
// once the CRD names its instance.
//
// Pure: the caller records the versions (list and watch), this decides.
import { VERDICT_REASONS } from '../api/handover-verdict.ts';

export interface HandoverClaim {
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string | undefined;
}

export interface ConfigVersion {
  /** etcd revision of this version (of the deletion, for a DELETED event). */
  revision: bigint;
  deleted: boolean;
  name: string;
  uid: string;
  target: string;
  assigned?: string | undefined;
  destination?: string | undefined;
  condition?: HandoverClaim | undefined;
}

export interface ServiceRef {
  name: string;
  namespace?: string | undefined;
}

export interface CrdVersion {
  revision: bigint;
  deleted: boolean;
  name: string;
  uid: string;
  /** The Service its spec.conversion names, if any. */
  service?: ServiceRef | undefined;
}

export interface FalseClaim {
  config: string;
  uid: string;
  revision: bigint;
  what: string;
}

/** The Service an instance's targets name: its name and namespace. */
export type ServiceOf = (instance: string) => ServiceRef;

/**
 * Every version of `configs` (each config's versions in revision order) that claims what its CRD
 * does not show. `crds` must hold every CRD version up to the highest revision judged.
 */
export function falseClaims(
  configs: readonly ConfigVersion[],
  crds: readonly CrdVersion[],
  serviceOf: ServiceOf,
): FalseClaim[] {
  const history = crdHistory(crds);
  const out: FalseClaim[] = [];
  for (const versions of byIncarnation(configs)) {
    // The first version of the condition before this one: the handover read the CRD for this
    // claim no earlier than that condition was stated (it was about the same assignment, or the
    // handover's own previous look).
    let previousSince: bigint | undefined;
    let since: bigint | undefined;
    let previousKey: string | undefined;
    for (const v of versions) {
      if (v.deleted) continue;
      const key = claimKey(v);
      if (key !== previousKey) {
        previousSince = since;
        since = v.revision;
      }
      previousKey = key;
      if (!isVerdict(v.condition)) continue;
      const problem = judge(v, previousSince ?? v.revision, history.get(v.target) ?? [], serviceOf);
      if (problem !== undefined)
        out.push({ config: v.name, uid: v.uid, revision: v.revision, what: problem });
    }
  }
  return out;
}

function judge(
  v: ConfigVersion,
  readNoEarlier: bigint,
  crd: readonly CrdVersion[],
  serviceOf: ServiceOf,
): string | undefined {
  const claim = `HandoverReady=True (${v.condition?.reason}: ${v.condition?.message})`;
  if (v.destination === undefined || v.destination !== v.assigned)
    return `${claim} about ${v.destination ?? 'no instance'} while the status assigns ${v.assigned ?? 'none'}`;
  const expected = serviceOf(v.destination);
  const at = stateAt(crd, v.revision);
  const named = at?.service;
  if (named !== undefined && sameService(named, expected)) return undefined;
  if (named !== undefined)
    return `${claim} about ${v.destination} while the CRD ${v.target} names Service ${named.namespace}/${named.name}`;
  const deletedSince = crd.filter((c) => c.deleted && c.revision > readNoEarlier && c.revision <= v.revision);
  if (deletedSince.some((c) => c.service !== undefined && sameService(c.service, expected))) return undefined;
  return at === undefined
    ? `${claim} about ${v.destination} while the CRD ${v.target} does not exist, and no incarnation of it deleted since the condition before named ${expected.name}`
    : `${claim} about ${v.destination} while the CRD ${v.target} (uid ${at.uid}) names no Service, and no incarnation of it deleted since the condition before named ${expected.name}`;
}

/** The CRD as it was right after `revision`: its last version at or before it, undefined if deleted or not created. */
function stateAt(versions: readonly CrdVersion[], revision: bigint): CrdVersion | undefined {
  let lo = 0;
  let hi = versions.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((versions[mid] as CrdVersion).revision <= revision) lo = mid + 1;
    else hi = mid;
  }
  const last = versions[lo - 1];
  return last === undefined || last.deleted ? undefined : last;
}

function crdHistory(crds: readonly CrdVersion[]): Map<string, CrdVersion[]> {
  const out = new Map<string, CrdVersion[]>();
  for (const c of crds) {
    const list = out.get(c.name) ?? [];
    list.push(c);
    out.set(c.name, list);
  }
  for (const list of out.values())
    list.sort((a, b) => (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0));
  return out;
}

function byIncarnation(configs: readonly ConfigVersion[]): ConfigVersion[][] {
  const out = new Map<string, ConfigVersion[]>();
  for (const c of configs) {
    const list = out.get(c.uid) ?? [];
    list.push(c);
    out.set(c.uid, list);
  }
  for (const list of out.values())
    list.sort((a, b) => (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0));
  return [...out.values()];
}

// A condition is the same claim while none of what it says changes: a status write of another
// field (the phase, Assigned) carries it unchanged and is not a new look by the handover.
function claimKey(v: ConfigVersion): string {
  const c = v.condition;
  return JSON.stringify([c?.status, c?.reason, c?.message, c?.lastTransitionTime, v.destination]);
}

function isVerdict(condition: HandoverClaim | undefined): boolean {
  return condition?.status === 'True' && (VERDICT_REASONS as readonly string[]).includes(condition.reason);
}

function sameService(a: ServiceRef, b: ServiceRef): boolean {
  return (
    a.name === b.name &&
    (a.namespace === undefined || b.namespace === undefined || a.namespace === b.namespace)
  );
}
