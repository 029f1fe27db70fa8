// A stand-in for one webhook-server replica's Lease publishing (BRIEF §4), until the data plane
// publishes real ones: `<prefix>-served-<pod>` in the instance's namespace, with the project's
// labels, owned by the Pod when one is given, holder = the Pod's name, the served set encoded by
// the core codec, renewed on an interval. A test can make it stop renewing (a wedged replica),
// publish the truncation marker, or write garbage.
import { CoordinationV1Api, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVED_SET_ANNOTATION,
  servedLeaseName,
  WEBHOOK_SERVER_LABEL,
} from '../../src/api/constants.ts';
import { type ExpectedSet, encodeServedSet, expectedSetOf } from '../../src/core/served-set-codec.ts';
import { microTime } from '../../src/webhook/lease-publisher.ts';

export interface ServedLeaseOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  instance: string;
  pod: string;
  /** Owner: the Pod, so the Lease is garbage-collected with it. */
  podUid?: string;
  served: Iterable<string>;
  /** What the replica encodes against: `expectedSets(view)(instance)`; empty by default. */
  expected?: ExpectedSet;
  leaseDurationSeconds?: number;
  renewEveryMs?: number;
  /** Added to renewTime: a node clock that runs ahead (positive) or behind. */
  clockOffsetMs?: number;
}

const FIELD_MANAGER = 'served-lease-fixture';

export class ServedLeasePublisher {
  readonly name: string;
  /** renewTime of every renewal written (heartbeats only), in order. */
  readonly renewals: string[] = [];
  private readonly api: CoordinationV1Api;
  private readonly opts: ServedLeaseOptions;
  private readonly expected: ExpectedSet;
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<unknown> = Promise.resolve();

  private constructor(opts: ServedLeaseOptions) {
    this.opts = opts;
    this.name = servedLeaseName(opts.pod);
    this.api = opts.kubeConfig.makeApiClient(CoordinationV1Api);
    this.expected = opts.expected ?? expectedSetOf([]);
  }

  /** Creates the Lease, renewed and with the encoded set, in one write (as a replica starts), and keeps renewing it. */
  static async start(opts: ServedLeaseOptions): Promise<ServedLeasePublisher> {
    const p = new ServedLeasePublisher(opts);
    const renewTime = p.renewTimeNow();
    // Server-side apply: one create that carries renewTime as the MicroTime string the typed create cannot send.
    await p.api.patchNamespacedLease(
      {
        name: p.name,
        namespace: opts.namespace,
        body: p.lease(p.encode(opts.served), renewTime),
        fieldManager: FIELD_MANAGER,
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    p.renewals.push(renewTime);
    p.resumeRenewing();
    return p;
  }

  /** Republishes the set at once, as a replica does on any change. */
  publish(served: Iterable<string>): Promise<void> {
    return this.writeAnnotation(this.encode(served));
  }

  /** Publishes the codec's truncation marker: a set too large for the budget. */
  truncate(served: Iterable<string>): Promise<void> {
    return this.writeAnnotation(encodeServedSet(served, this.expected, { budgetBytes: 1 }));
  }

  /** Writes a value no reader can decode. */
  garbage(value = 'v2.n.not-base64!'): Promise<void> {
    return this.writeAnnotation(value);
  }

  /** A wedged replica: the Lease stays, renewTime stops moving. */
  stopRenewing(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  resumeRenewing(): void {
    this.stopRenewing();
    this.timer = setInterval(() => {
      this.pending = this.renew().catch(() => undefined);
    }, this.opts.renewEveryMs ?? 1_000);
  }

  /** One heartbeat: only renewTime changes. */
  async renew(): Promise<void> {
    const renewTime = this.renewTimeNow();
    await this.patch({ spec: { renewTime } });
    this.renewals.push(renewTime);
  }

  /** Stops renewing and waits for a renewal in flight. */
  async stop(): Promise<void> {
    this.stopRenewing();
    await this.pending;
  }

  private renewTimeNow(): string {
    return microTime(Date.now() + (this.opts.clockOffsetMs ?? 0));
  }

  private encode(served: Iterable<string>): string {
    return encodeServedSet(served, this.expected);
  }

  private writeAnnotation(value: string): Promise<void> {
    return this.patch({ metadata: { annotations: { [SERVED_SET_ANNOTATION]: value } } });
  }

  private async patch(body: object): Promise<void> {
    await this.api.patchNamespacedLease(
      { name: this.name, namespace: this.opts.namespace, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  private lease(value: string, renewTime: string): object {
    const { instance, pod, podUid } = this.opts;
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.name,
        namespace: this.opts.namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [WEBHOOK_SERVER_LABEL]: instance },
        annotations: { [SERVED_SET_ANNOTATION]: value },
        ...(podUid && {
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod, uid: podUid }],
        }),
      },
      spec: {
        holderIdentity: pod,
        leaseDurationSeconds: this.opts.leaseDurationSeconds ?? 90,
        renewTime,
      },
    };
  }
}
