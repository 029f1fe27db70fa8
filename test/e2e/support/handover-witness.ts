// Watches the recorded stream for the moment a target is repointed, and writes down what the
// destination's Pods had reported by then. It follows the bus the way the handlers do (an
// ObjectView applies records in stream order), so at the record that names the new Service it
// sees exactly the Leases and EndpointSlices recorded before it: the state the gate must have
// passed on. It decides nothing; the test reads `repoints`.
//
// A replica whose view falls behind the bus publishes "cannot tell" (viewBehind) and keeps every
// plan it holds (docs/reliability.md), so a Pod whose last readable report listed the target
// still holds its plan while it says "cannot tell": the witness counts it as reported, and says so.
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { webhookServiceName } from '../../../src/api/constants.ts';
import { ObjectView } from '../../../src/bus/view.ts';
import { decodeServedSet } from '../../../src/core/served-set-codec.ts';
import { conversionServiceOf } from '../../../src/core/target-conversion.ts';
import { type HandoverOnView, handoverOnView } from '../../../src/handlers/handover.ts';
import { readExpectedSets, readInstanceLeases, readReadyPods } from '../../../src/views/view-reads.ts';
import { REPLICA_VIEW_KINDS } from '../../../src/webhook/world.ts';

export interface PodAtRepoint {
  pod: string;
  /** Its served-set Lease, decoded as a reader decodes it, lists the target. */
  reported: boolean;
  why?: string;
}

export interface Repoint {
  target: string;
  from: string | undefined;
  to: string;
  atMs: number;
  /** The destination's ready Pods when the record naming it was applied, and what each had reported. */
  readyPods: PodAtRepoint[];
}

export class HandoverWitness {
  readonly repoints: Repoint[] = [];
  private readonly view: ObjectView;
  private readonly services = new Map<string, string | undefined>();
  /** Per Pod, the targets of its last readable report, as recorded. */
  private readonly lastReadable = new Map<string, ReadonlySet<string>>();
  private readonly namespace: string;
  private readonly instances: readonly string[];
  private readonly instanceOfService: (service: string) => string | undefined;

  constructor(opts: { namespace: string; instances: readonly string[]; log: Logger }) {
    this.namespace = opts.namespace;
    this.instances = opts.instances;
    const byService = new Map(opts.instances.map((i) => [webhookServiceName(i), i]));
    this.instanceOfService = (service) => byService.get(service);
    this.view = new ObjectView([...REPLICA_VIEW_KINDS, 'lease', 'endpointslice'], opts.log);
  }

  async start(js: JetStreamClient): Promise<void> {
    await this.view.start(js);
    for (const crd of this.view.list('crd')) this.services.set(crd.metadata.name, conversionServiceOf(crd));
    this.view.onChange((kind) => {
      if (kind === 'lease') this.onLeases();
      if (kind === 'crd') this.onTargets();
    });
  }

  stop(): void {
    this.view.stop();
  }

  /**
   * The gate's decision about `target` on this view now, as the handover and `switchyard explain`
   * read it: what a test asks when it must act while the gate waits in a given state (the
   * handover writes a young wait to no status, core/handover-status.ts).
   */
  gateNow(target: string): HandoverOnView {
    return handoverOnView(this.view, target, { defaultNamespace: this.namespace, nowMs: Date.now() });
  }

  private onTargets(): void {
    for (const crd of this.view.list('crd')) {
      const name = crd.metadata.name;
      const service = conversionServiceOf(crd);
      const before = this.services.get(name);
      this.services.set(name, service);
      if (service === undefined || service === before) continue;
      const to = this.instanceOfService(service);
      if (to === undefined) continue;
      this.repoints.push({
        target: name,
        from: before === undefined ? undefined : this.instanceOfService(before),
        to,
        atMs: Date.now(),
        readyPods: this.reportsOf(to, name),
      });
    }
  }

  private onLeases(): void {
    for (const instance of this.instances) {
      const expected = readExpectedSets(this.view)(instance);
      for (const lease of readInstanceLeases(this.view, instance, this.namespace)) {
        if (lease.servedSet === undefined || lease.holder === undefined) continue;
        const decoded = decodeServedSet(lease.servedSet, expected);
        if (decoded.kind === 'set') this.lastReadable.set(lease.holder, decoded.served);
      }
    }
  }

  private reportsOf(instance: string, target: string): PodAtRepoint[] {
    const expected = readExpectedSets(this.view)(instance);
    const leases = readInstanceLeases(this.view, instance, this.namespace);
    return readReadyPods(this.view, instance, this.namespace).map((pod) => {
      const lease = leases.find((l) => l.holder === pod);
      if (lease?.servedSet === undefined) return { pod, reported: false, why: 'no served-set Lease' };
      const decoded = decodeServedSet(lease.servedSet, expected);
      if (decoded.kind === 'viewBehind' && this.lastReadable.get(pod)?.has(target))
        return {
          pod,
          reported: true,
          why: 'its report is viewBehind; its last readable one listed the target',
        };
      if (decoded.kind !== 'set') return { pod, reported: false, why: `its report is ${decoded.kind}` };
      return decoded.served.has(target)
        ? { pod, reported: true }
        : { pod, reported: false, why: 'its report does not list the target' };
    });
  }
}
