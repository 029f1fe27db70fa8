// A KubeWriter with no apiserver behind it, for benches that run handlers against a bus alone:
// every write succeeds at once and is recorded (count and body bytes per resource), and what was
// applied is kept so a reader (the instances handler's Secrets) finds it again. Nothing is
// recorded on the bus: the view never sees these writes, as if the watchers were not running.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { SecretRead, SecretReader } from '../src/handlers/instances/secrets.ts';
import type { WritesClient } from '../src/kube/clients.ts';
import {
  type ApplyOptions,
  KubeWriter,
  type ObjectRef,
  type ResourceRef,
  type WriteOptions,
} from '../src/kube/writer.ts';

export interface WriteTally {
  writes: number;
  bytes: number;
}

export class RecordingWriter extends KubeWriter {
  readonly tally = new Map<string, WriteTally>();
  private readonly stored = new Map<string, KubernetesObject>();
  private version = 1_000_000;

  constructor(fieldManager: string) {
    // No request is ever sent: every method that would use the client is overridden.
    super(undefined as unknown as WritesClient, fieldManager);
  }

  override apply<T extends KubernetesObject>(ref: ResourceRef, obj: T, _opts: ApplyOptions = {}): Promise<T> {
    return Promise.resolve(this.store(ref, 'apply', obj));
  }

  override applyStatus<T extends KubernetesObject>(
    ref: ResourceRef,
    obj: T,
    _opts: ApplyOptions = {},
  ): Promise<T> {
    return Promise.resolve(this.store(ref, 'status', obj));
  }

  override mergePatch<T extends KubernetesObject>(
    ref: ResourceRef,
    target: ObjectRef & { resourceVersion: string },
    patch: Record<string, unknown>,
    _opts: WriteOptions & { subresource?: 'status' } = {},
  ): Promise<T> {
    this.count(`${ref.resource} patch`, patch);
    const { resourceVersion: _read, ...name } = target;
    return Promise.resolve({ ...patch, metadata: { ...name, resourceVersion: String(++this.version) } } as T);
  }

  /** An object the cluster already holds (applied before the bench), not counted as a write. */
  seed(ref: ResourceRef, obj: KubernetesObject): void {
    this.stored.set(`${ref.resource}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`, obj);
  }

  /** What an instances handler reads back: the Secrets it applied, decoded as `secretReader` returns them. */
  readonly secrets: SecretReader = (namespace, name) => {
    const secret = this.stored.get(`secrets/${namespace}/${name}`) as
      | (KubernetesObject & { data?: Record<string, string> })
      | undefined;
    if (!secret) return Promise.resolve(undefined);
    const read: SecretRead = {
      data: Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      ),
      resourceVersion: secret.metadata?.resourceVersion,
    };
    return Promise.resolve(read);
  };

  get writeCount(): number {
    let n = 0;
    for (const t of this.tally.values()) n += t.writes;
    return n;
  }

  private store<T extends KubernetesObject>(ref: ResourceRef, how: string, obj: T): T {
    this.count(`${ref.resource} ${how}`, obj);
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.version) } };
    if (how === 'apply')
      this.stored.set(`${ref.resource}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`, stored);
    return stored;
  }

  private count(what: string, body: unknown): void {
    const t = this.tally.get(what) ?? { writes: 0, bytes: 0 };
    t.writes++;
    t.bytes += Buffer.byteLength(JSON.stringify(body));
    this.tally.set(what, t);
  }
}
