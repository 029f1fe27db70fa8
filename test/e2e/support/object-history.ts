// Every version of a collection's objects the apiserver stored, in order: a list, then a watch
// from the list's resourceVersion, resumed from the last version seen whenever the apiserver ends
// it (as a reflector does). A 410 Gone means versions were compacted away before they were
// read: the history lists again and counts the gap (`gaps`), so a check that reads it knows it
// may have missed versions. The apiserver's watch sends every version of every object, none
// coalesced, in resourceVersion order.
import type { KubeConfig } from '@kubernetes/client-node';
import { apiUrl, HttpMethod, send } from '../../../src/kube/request.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';

export interface StoredObject {
  metadata: { name: string; uid: string; resourceVersion: string };
  [field: string]: unknown;
}

export interface ObjectVersion {
  /** The resourceVersion as a number: etcd's revision on a cluster of one etcd. */
  revision: bigint;
  deleted: boolean;
  object: StoredObject;
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: StoredObject & { code?: number };
}

export class ObjectHistory {
  readonly versions: ObjectVersion[] = [];
  gaps = 0;
  private lastRevision = 0n;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly kc: KubeConfig;
  private readonly path: string;

  constructor(kc: KubeConfig, path: string) {
    this.kc = kc;
    this.path = path;
  }

  async start(): Promise<void> {
    const rv = await this.list();
    this.loop = this.watch(rv);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** The highest revision read so far: every version up to it is in `versions`. */
  get revision(): bigint {
    return this.lastRevision;
  }

  /** Resolves once the history holds every version up to `revision`. */
  async reach(revision: bigint, what: string): Promise<void> {
    await waitFor(`the ${what} history to reach revision ${revision}`, () =>
      this.lastRevision >= revision ? true : undefined,
    );
  }

  private async list(): Promise<string> {
    const res = await send(this.kc, HttpMethod.GET, apiUrl(this.kc, this.path));
    const body = (await res.json()) as { metadata: { resourceVersion: string }; items: StoredObject[] };
    if (res.status !== 200) throw new Error(`listing ${this.path}: HTTP ${res.status}`);
    for (const object of body.items) this.record('MODIFIED', object);
    this.lastRevision = BigInt(body.metadata.resourceVersion);
    return body.metadata.resourceVersion;
  }

  private async watch(fromVersion: string): Promise<void> {
    let rv = fromVersion;
    while (!this.abort.signal.aborted) {
      try {
        const url = apiUrl(this.kc, this.path);
        url.searchParams.set('watch', '1');
        url.searchParams.set('resourceVersion', rv);
        url.searchParams.set('allowWatchBookmarks', 'true');
        const res = await send(this.kc, HttpMethod.GET, url, { signal: this.abort.signal });
        if (res.status !== 200 || !res.body) {
          await res.text();
          await sleep(500);
          continue;
        }
        const next = await this.readEvents(res.body, rv);
        if (next !== 'gone') {
          rv = next;
          continue;
        }
        this.gaps++;
        rv = await this.list();
      } catch (err) {
        if (this.abort.signal.aborted) return;
        process.stderr.write(`[object-history] ${this.path}: ${(err as Error).message}; watching again\n`);
        await sleep(500);
      }
    }
  }

  private async readEvents(body: ReadableStream<Uint8Array>, fromVersion: string): Promise<string | 'gone'> {
    let rv = fromVersion;
    let buffered = '';
    const decoder = new TextDecoder();
    for await (const chunk of body) {
      buffered += decoder.decode(chunk, { stream: true });
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.trim() === '') continue;
        const event = JSON.parse(line) as WatchEvent;
        if (event.type === 'ERROR') {
          if (event.object.code === 410) return 'gone';
          throw new Error(`watch error: ${JSON.stringify(event.object)}`);
        }
        rv = event.object.metadata.resourceVersion;
        if (event.type !== 'BOOKMARK') this.record(event.type, event.object);
        this.lastRevision = BigInt(rv);
      }
    }
    return rv;
  }

  private record(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: StoredObject): void {
    this.versions.push({
      revision: BigInt(object.metadata.resourceVersion),
      deleted: type === 'DELETED',
      object,
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
