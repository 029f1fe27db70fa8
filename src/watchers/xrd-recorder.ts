/**
 * The XRD watcher of the watcher process, kept in step with Crossplane's API: discovery is read at
 * start and every `watchers.discoverySeconds`, `decideXrdRecording` (xrd-api.ts) says what the
 * answer asks for, and this does it. So Crossplane installed, upgraded or removed while the
 * watchers run is recorded without a restart, within a period.
 *
 * It runs beside the other watchers and nothing waits on it: the process is ready whether
 * Crossplane is there or not, and a read or a step that fails (the apiserver or NATS briefly
 * away) leaves what runs as it is and is tried again next period.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KINDS } from '../api/resources.ts';
import { systemClock } from '../runtime/clock.ts';
import { listObjects, servedResources, servedVersions } from './list-objects.ts';
import type { ObjectWatcher } from './object-watcher.ts';
import { type WatchedResource, XRD_RESOURCE, xrdResourceAt } from './resources.ts';
import {
  type DiscoveryRead,
  decideXrdRecording,
  XRD_VERSIONS,
  type XrdDiscovery,
  type XrdRecording,
  type XrdVersion,
} from './xrd-api.ts';

const { group: XRD_GROUP, resource: XRD_PLURAL } = KINDS.xrd;
/** The CRD Crossplane serves its XRDs from: `<plural>.<group>`. */
const XRD_DEFINITION = `${XRD_PLURAL}.${XRD_GROUP}`;

/**
 * Reads what discovery says of Crossplane's group: the versions among XRD_VERSIONS that serve XRDs
 * and, where none does, whether the XRD CRD is gone (a list by name: the watchers may list CRDs).
 */
async function discoverXrdApi(kc: KubeConfig): Promise<XrdDiscovery> {
  const candidates = (await servedVersions(kc, XRD_GROUP)).filter((v) =>
    (XRD_VERSIONS as readonly string[]).includes(v),
  );
  const servedAt: string[] = [];
  for (const version of candidates)
    if ((await servedResources(kc, `${XRD_GROUP}/${version}`)).includes(XRD_PLURAL)) servedAt.push(version);
  if (servedAt.length > 0) return { servedAt, definitionGone: false };
  const definitions = await listObjects(kc, KINDS.crd.listPath, {
    fieldSelector: `metadata.name=${XRD_DEFINITION}`,
  });
  return { servedAt, definitionGone: definitions.items.length === 0 };
}

export class XrdRecorder {
  private recording: XrdRecording = 'idle';
  private watcher: ObjectWatcher | undefined;
  private readonly stopping = new AbortController();
  private readonly kubeConfig: KubeConfig;
  private readonly periodMs: number;
  private readonly newWatcher: (resource: WatchedResource) => Promise<ObjectWatcher>;
  private readonly log: Logger;

  constructor(opts: {
    /** The informers client's: discovery is read with the watchers' identity and User-Agent. */
    kubeConfig: KubeConfig;
    periodMs: number;
    /** A watcher of `resource`, not started, knowing what the bus holds of it (as the process makes the others). */
    newWatcher: (resource: WatchedResource) => Promise<ObjectWatcher>;
    log: Logger;
  }) {
    this.kubeConfig = opts.kubeConfig;
    this.periodMs = opts.periodMs;
    this.newWatcher = opts.newWatcher;
    this.log = opts.log.child({ kind: KINDS.xrd.viewKind });
  }

  /** Reads discovery now, then every period, until `stop()`. */
  start(): void {
    void this.loop();
  }

  stop(): void {
    this.stopping.abort();
    this.watcher?.stop();
  }

  private async loop(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      await this.round();
      await systemClock.sleep(this.periodMs, this.stopping.signal);
    }
  }

  /** One read of discovery and the step it asks for. Never throws. */
  private async round(): Promise<void> {
    const read: DiscoveryRead = await discoverXrdApi(this.kubeConfig).then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    );
    if (this.stopping.signal.aborted) return;
    if (!read.ok)
      this.log.warn(
        { err: read.error, recording: this.recording, retryInMs: this.periodMs },
        'could not read discovery of Crossplane’s API: XRD recording left as it is',
      );
    const step = decideXrdRecording(read, this.recording);
    try {
      if (step.step === 'watch') await this.watch(step.version, step.replacing);
      else if (step.step === 'retire') await this.retire(step.stopping);
    } catch (err) {
      if (!this.stopping.signal.aborted)
        this.log.warn(
          { err, step, recording: this.recording, retryInMs: this.periodMs },
          'could not change XRD recording as discovery asks: trying again next period',
        );
    }
  }

  /** Starts the new watcher before stopping the old one: no change goes unwatched in between. */
  private async watch(version: XrdVersion, replacing: XrdVersion | undefined): Promise<void> {
    const next = await this.newWatcher(xrdResourceAt(version));
    await next.start();
    if (this.stopping.signal.aborted) {
      next.stop();
      return;
    }
    this.watcher?.stop();
    this.watcher = next;
    this.recording = version;
    this.log.info(
      { xrdApi: `${XRD_GROUP}/${version}`, replacing },
      replacing
        ? `Crossplane’s XRD API changed version: recording XRDs at ${version} instead of ${replacing}`
        : `Crossplane’s XRD API is served: recording XRDs at ${version}`,
    );
  }

  private async retire(stopping: XrdVersion | undefined): Promise<void> {
    this.watcher?.stop();
    this.watcher = undefined;
    // Until the deletions are all recorded: a failure leaves it to be retired again next period.
    this.recording = 'idle';
    const recordedDeleted = await (await this.newWatcher(XRD_RESOURCE)).recordAllGone();
    this.recording = 'retired';
    this.log.info(
      { xrdApi: 'absent', stopped: stopping, recordedDeleted },
      stopping
        ? 'Crossplane’s XRD API is gone with its CRD: stopped recording XRDs, and every XRD still recorded is recorded as deleted'
        : 'Crossplane’s XRD API is not served and its CRD does not exist: XRDs are recorded once it is served',
    );
  }
}
