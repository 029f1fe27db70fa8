import { type KubeConfig, Watch } from '@kubernetes/client-node';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { RecordWriter } from '../../src/bus/records/record-writer.ts';
import { DEFAULT_TOPOLOGY, type TopologyOptions, tombstoneTtl } from '../../src/bus/topology.ts';
import { ObjectView } from '../../src/bus/view.ts';
import { ASSIGN_VIEW_KINDS } from '../../src/handlers/assign/world.ts';
import { startRouter } from '../../src/handlers/router.ts';
import { loadRecorded, ObjectWatcher } from '../../src/watchers/object-watcher.ts';
import { RECORDED_RESOURCES, type WatchedResource } from '../../src/watchers/resources.ts';

export interface BusHandles {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/** A watcher wired as `switchyard watch` wires it: starting from what the bus holds, writing through a RecordWriter. */
export async function startRecording(
  bus: BusHandles,
  resource: WatchedResource,
  opts: { kubeConfig: KubeConfig; log: Logger; topology?: TopologyOptions; newWatch?: () => Watch },
): Promise<ObjectWatcher> {
  const writer = new RecordWriter({
    js: bus.js,
    jsm: bus.jsm,
    maxPayload: bus.nc.info?.max_payload ?? 1024 * 1024,
    tombstoneTtl: tombstoneTtl(opts.topology ?? DEFAULT_TOPOLOGY),
  });
  const watcher = new ObjectWatcher({
    resource,
    informers: { kubeConfig: opts.kubeConfig, newWatch: opts.newWatch ?? (() => new Watch(opts.kubeConfig)) },
    writer,
    js: bus.js,
    log: opts.log,
    recorded: await loadRecorded(bus.js, resource, opts.log),
  });
  await watcher.start();
  return watcher;
}

/**
 * Real watches that a test can cut (as a lost connection would) and hold back
 * from reconnecting: what it takes to make the apiserver answer a watcher's
 * own resume with 410 Gone, the path production takes.
 */
export class InterruptibleWatches {
  private readonly kubeConfig: KubeConfig;
  private readonly open = new Set<{ controller?: AbortController; cut: boolean }>();
  private gate: Promise<void> | undefined;
  private openGate: () => void = () => undefined;
  /** Watch requests made, in order (the resourceVersion each asked for). */
  readonly requests: string[] = [];

  constructor(kubeConfig: KubeConfig) {
    this.kubeConfig = kubeConfig;
  }

  readonly newWatch = (): Watch => {
    const real = new Watch(this.kubeConfig);
    const watches = this;
    return Object.assign(Object.create(real) as Watch, {
      async watch(...[path, query, onEvent, onDone]: Parameters<Watch['watch']>) {
        await watches.gate;
        watches.requests.push(String((query as { resourceVersion?: string }).resourceVersion ?? ''));
        // A lost connection delivers nothing more: drop what the aborted stream still had buffered.
        // Registered before the request is answered, so a cut right after it still applies.
        const handle: { controller?: AbortController; cut: boolean } = { cut: false };
        watches.open.add(handle);
        const controller = await real.watch(
          path,
          query,
          (type, object, watchObj) => {
            if (!handle.cut) onEvent(type, object, watchObj);
          },
          onDone,
        );
        handle.controller = controller;
        if (handle.cut) controller.abort();
        return controller;
      },
    });
  };

  /** Cuts every open watch and holds new ones until `release()`. */
  cutAndHold(): void {
    this.gate = new Promise((resolve) => {
      this.openGate = resolve;
    });
    for (const handle of this.open) {
      handle.cut = true;
      handle.controller?.abort();
    }
    this.open.clear();
  }

  release(): void {
    this.gate = undefined;
    this.openGate();
  }
}

/**
 * What a handler's integration test stands on: a watcher for every recorded kind (as
 * `switchyard watch` runs them) and the real router (as `switchyard router` runs it) on the
 * test's own bus. Resolves to a function that stops them all.
 */
export async function startRecordingAndRouting(
  bus: BusHandles,
  opts: { kubeConfig: KubeConfig; log: Logger; partitions: number },
): Promise<() => Promise<void>> {
  const watchers: ObjectWatcher[] = [];
  for (const resource of RECORDED_RESOURCES) watchers.push(await startRecording(bus, resource, opts));
  const view = new ObjectView(ASSIGN_VIEW_KINDS, opts.log);
  await view.start(bus.js);
  const p = opts.partitions;
  const router = await startRouter({
    ...bus,
    view,
    partitions: { assign: p, leaseAggregate: p, configStatus: p, instances: p, handover: p },
    log: opts.log,
  });
  return async () => {
    await router.stop();
    view.stop();
    for (const w of watchers) w.stop();
  };
}
