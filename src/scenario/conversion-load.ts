// Sustained load on a target at a version it does not store: every create, patch, get and list
// goes through a conversion (both ways for writes), and a watch sees every change converted. Each
// worker owns its objects and writes them one at a time, so it always knows the values each may
// have: every value returned is checked against what was written (a wrong value is a failure,
// however successful the request looked). A relist runs beside the workers, so a read may
// overlap a write: it may show any value the object had while it was in flight
// (expected-value.ts), never an older one.
//
// What counts as a failure is what a client with client-go's behaviour would surface: a 429
// with Retry-After (a repoint rebuilds the resource's storage, and for about a second it
// answers "storage is (re)initializing") is retried, as client-go retries it, and counted
// apart; a watch that ends is resumed from its last resourceVersion, and one answered 410 Gone
// is relisted, as an informer does, both counted apart. Any other non-2xx, a network error, a 429 that persists
// past the retries, or a value that differs from what was written is a failure.
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod, send } from '../kube/request.ts';
import { systemClock } from '../runtime/clock.ts';
import { ExpectedValue, type ReadWindow } from './expected-value.ts';

export interface LoadTarget {
  kc: KubeConfig;
  group: string;
  /** The version the load reads and writes at: not the storage version. */
  version: string;
  plural: string;
  kind: string;
  namespace: string;
  /** The field, under spec, that the load writes and checks at `version`. */
  field: string;
}

export interface LoadOptions {
  /** Labels this run's objects, so its list and watch see only them. */
  run: string;
  workers: number;
  objectsPerWorker: number;
  /** Pause between one worker's requests. */
  pauseMs: number;
}

export type Op = 'create' | 'patch' | 'get' | 'list' | 'watch';

export interface Failure {
  op: Op;
  object?: string;
  status?: number;
  message: string;
  atMs: number;
}

export interface WrongValue {
  op: Op;
  /** The resource's plural: every target's load names its objects alike. */
  target: string;
  object: string;
  expected: readonly string[];
  got: unknown;
  atMs: number;
}

export interface LoadSummary {
  requests: number;
  byOp: Record<Op, number>;
  failures: Failure[];
  wrongValues: WrongValue[];
  /** 429s with Retry-After that a retry got past (the storage re-initializing after a repoint). */
  throttledRetries: number;
  watchEvents: number;
  /** Watches that ended and were resumed from their last resourceVersion. */
  watchResumes: number;
  /** Watches answered 410 Gone (the resource's watch cache rebuilt after a repoint), relisted as an informer does. */
  relists: number;
  durationMs: number;
}

/** What a load has counted up to one moment (`ConversionLoad.tally`). */
export interface LoadTally {
  atMs: number;
  requests: number;
  failures: Failure[];
  wrongValues: WrongValue[];
  throttledRetries: number;
  watchEvents: number;
  watchResumes: number;
  relists: number;
}

const RUN_LABEL = 'e2e.switchyard.dev/load-run';
const WORKER_LABEL = 'e2e.switchyard.dev/load-worker';
/** client-go's default: a throttled request is retried up to ten times. */
const MAX_THROTTLE_RETRIES = 10;
const REQUEST_TIMEOUT_MS = 30_000;

export class ConversionLoad {
  private readonly target: LoadTarget;
  private readonly opts: LoadOptions;
  private readonly expected = new Map<string, ExpectedValue>();
  private readonly watched = new Map<string, string>();
  private readonly failures: Failure[] = [];
  private readonly wrongValues: WrongValue[] = [];
  private readonly byOp: Record<Op, number> = { create: 0, patch: 0, get: 0, list: 0, watch: 0 };
  private throttledRetries = 0;
  private watchEvents = 0;
  private watchResumes = 0;
  private relists = 0;
  private stopping = false;
  private readonly watchAbort = new AbortController();
  private workers: Promise<void>[] = [];
  private watchLoop: Promise<void> | undefined;
  private startedAt = 0;
  private counter = 0;

  constructor(target: LoadTarget, opts: LoadOptions) {
    this.target = target;
    this.opts = opts;
  }

  /** Starts the watch, then the workers; resolves once the watch is established. */
  async start(): Promise<void> {
    this.startedAt = performance.now();
    const rv = await this.listResourceVersion();
    this.watchLoop = this.watch(rv);
    this.workers = Array.from({ length: this.opts.workers }, (_, w) => this.work(w));
  }

  /** Counts so far, for progress lines. */
  progress(): { requests: number; failures: number; wrongValues: number } {
    return {
      requests: Object.values(this.byOp).reduce((a, b) => a + b, 0) - this.byOp.watch,
      failures: this.failures.length,
      wrongValues: this.wrongValues.length,
    };
  }

  /**
   * Everything counted so far, without stopping: a long run cut into windows, each the difference
   * of two tallies (the chaos suite's one per fault). `atMs` is on the clock of `Failure.atMs`.
   */
  tally(): LoadTally {
    return {
      atMs: this.elapsed(),
      requests: this.progress().requests,
      failures: [...this.failures],
      wrongValues: [...this.wrongValues],
      throttledRetries: this.throttledRetries,
      watchEvents: this.watchEvents,
      watchResumes: this.watchResumes,
      relists: this.relists,
    };
  }

  /**
   * Stops the workers, then waits (up to `settleMs`) for the watch to show every object's last
   * written value: an object whose watched value never gets there is a wrong value.
   */
  async stop(settleMs = 15_000): Promise<LoadSummary> {
    this.stopping = true;
    await Promise.all(this.workers);
    const deadline = Date.now() + settleMs;
    while (Date.now() < deadline && this.watchLagging().length > 0) await systemClock.sleep(200);
    for (const name of this.watchLagging())
      this.wrong('watch', name, this.expected.get(name)?.finalValues() ?? [], this.watched.get(name));
    this.watchAbort.abort();
    await this.watchLoop;
    return {
      requests: Object.values(this.byOp).reduce((a, b) => a + b, 0) - this.byOp.watch,
      byOp: { ...this.byOp },
      failures: [...this.failures],
      wrongValues: [...this.wrongValues],
      throttledRetries: this.throttledRetries,
      watchEvents: this.watchEvents,
      watchResumes: this.watchResumes,
      relists: this.relists,
      durationMs: this.elapsed(),
    };
  }

  private watchLagging(): string[] {
    return [...this.expected]
      .filter(([name, e]) => !e.finalValues().includes(this.watched.get(name) ?? ''))
      .map(([n]) => n);
  }

  private elapsed(): number {
    return performance.now() - this.startedAt;
  }

  private collection(): string {
    const { group, version, namespace, plural } = this.target;
    return `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
  }

  private url(path: string, query: Record<string, string> = {}): URL {
    const server = this.target.kc.getCurrentCluster()?.server ?? '';
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url;
  }

  private async work(worker: number): Promise<void> {
    const names = Array.from(
      { length: this.opts.objectsPerWorker },
      (_, i) => `${this.opts.run}-w${worker}-o${i}`,
    );
    for (const name of names) {
      if (this.stopping) return;
      await this.create(worker, name);
      await systemClock.sleep(this.opts.pauseMs);
    }
    while (!this.stopping) {
      const name = names[Math.floor(Math.random() * names.length)] as string;
      const roll = Math.random();
      if (roll < 0.35) await this.patch(name);
      else if (roll < 0.7) await this.get(name);
      else await this.list(worker);
      await systemClock.sleep(this.opts.pauseMs);
    }
  }

  private nextValue(name: string): string {
    this.counter++;
    return `${name}-v${this.counter}`;
  }

  private async create(worker: number, name: string): Promise<void> {
    const value = this.nextValue(name);
    const { group, version, kind, field } = this.target;
    const body = {
      apiVersion: `${group}/${version}`,
      kind,
      metadata: { name, labels: { [RUN_LABEL]: this.opts.run, [WORKER_LABEL]: String(worker) } },
      spec: { [field]: value, color: `color-${worker}` },
    };
    // Expected before it is sent: the watch may show the object before the answer arrives. A
    // create that fails leaves it expected anyway (it may have been stored); reads settle it.
    const expected = new ExpectedValue();
    this.expected.set(name, expected);
    expected.writeSent(value);
    const res = await this.request('create', name, HttpMethod.POST, this.url(this.collection()), body);
    this.settleWrite('create', name, value, res);
  }

  private async patch(name: string): Promise<void> {
    const expected = this.expected.get(name);
    if (!expected) return;
    const value = this.nextValue(name);
    expected.writeSent(value);
    const res = await this.request(
      'patch',
      name,
      HttpMethod.PATCH,
      this.url(`${this.collection()}/${name}`),
      { spec: { [this.target.field]: value } },
      'application/merge-patch+json',
    );
    this.settleWrite('patch', name, value, res);
  }

  /** A write's answer must carry the value written, at the load's version. */
  private settleWrite(
    op: Op,
    name: string,
    value: string,
    res: { ok: true; body: unknown } | { ok: false },
  ): void {
    const expected = this.expected.get(name);
    if (!res.ok) {
      expected?.writeFailed(value);
      return;
    }
    expected?.writeSucceeded(value);
    const got = valueAt(res.body, this.target);
    if (got !== value) this.wrong(op, name, [value], got);
  }

  private async get(name: string): Promise<void> {
    const window = this.expected.get(name)?.readSent();
    const res = await this.request('get', name, HttpMethod.GET, this.url(`${this.collection()}/${name}`));
    if (res.ok && window) this.checkRead('get', name, window, res.body);
  }

  /** What every object may read as, for a list sent now. */
  private readWindows(): Map<string, ReadWindow> {
    return new Map([...this.expected].map(([name, e]) => [name, e.readSent()]));
  }

  private async list(worker: number): Promise<void> {
    const windows = this.readWindows();
    const res = await this.request(
      'list',
      undefined,
      HttpMethod.GET,
      this.url(this.collection(), {
        labelSelector: `${RUN_LABEL}=${this.opts.run},${WORKER_LABEL}=${worker}`,
      }),
    );
    if (!res.ok) return;
    this.checkList(windows, (res.body as { items?: unknown[] }).items ?? []);
  }

  private checkList(windows: Map<string, ReadWindow>, items: unknown[]): void {
    for (const item of items) {
      const name = (item as { metadata?: { name?: string } }).metadata?.name ?? '';
      // Created after the list was sent: any value written to it is possible.
      const window = windows.get(name) ?? { possible: new Set<string>(), writtenBefore: 0, quiet: false };
      this.checkRead('list', name, window, item);
    }
  }

  /**
   * The object must be at the load's version and carry a value it may have had while the read
   * was in flight: reads overlap writes (a relist runs beside the workers).
   */
  private checkRead(op: Op, name: string, window: ReadWindow, object: unknown): void {
    const expected = this.expected.get(name);
    if (!expected) return;
    const got = valueAt(object, this.target);
    if (expected.readReturned(window, got)) return;
    const possible = [...window.possible, ...expected.allWritten().slice(window.writtenBefore)];
    this.wrong(op, name, possible, got);
  }

  private wrong(op: Op, name: string, expected: readonly string[], got: unknown): void {
    this.wrongValues.push({
      op,
      target: this.target.plural,
      object: name,
      expected,
      got,
      atMs: this.elapsed(),
    });
  }

  private async request(
    op: Op,
    object: string | undefined,
    method: HttpMethod,
    url: URL,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ ok: true; body: unknown } | { ok: false }> {
    this.byOp[op]++;
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await send(this.target.kc, method, url, {
          ...(body !== undefined && { body, contentType }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.text();
        const retryAfter = Number(res.headers.get('retry-after'));
        if (res.status === 429 && retryAfter > 0 && attempt < MAX_THROTTLE_RETRIES) {
          this.throttledRetries++;
          await systemClock.sleep(Math.min(retryAfter, 1) * 1000);
          continue;
        }
        if (res.status >= 200 && res.status < 300) return { ok: true, body: JSON.parse(text) };
        this.fail(op, object, res.status, messageOf(text));
        return { ok: false };
      } catch (err) {
        this.fail(op, object, undefined, (err as Error).message);
        return { ok: false };
      }
    }
  }

  private fail(op: Op, object: string | undefined, status: number | undefined, message: string): void {
    this.failures.push({
      op,
      ...(object !== undefined && { object }),
      ...(status !== undefined && { status }),
      message,
      atMs: this.elapsed(),
    });
  }

  private async listResourceVersion(): Promise<string> {
    const rv = await this.relist();
    if (rv === undefined)
      throw new Error(`the load's first list failed: ${JSON.stringify(this.failures.at(-1))}`);
    return rv;
  }

  /** Lists this run's objects into the watched state; the list's resourceVersion, or undefined if it failed. */
  private async relist(): Promise<string | undefined> {
    const windows = this.readWindows();
    const res = await this.request(
      'list',
      undefined,
      HttpMethod.GET,
      this.url(this.collection(), { labelSelector: `${RUN_LABEL}=${this.opts.run}` }),
    );
    if (!res.ok) return undefined;
    const list = res.body as { metadata?: { resourceVersion?: string }; items?: unknown[] };
    this.watched.clear();
    this.checkList(windows, list.items ?? []);
    for (const item of list.items ?? []) {
      const name = (item as { metadata?: { name?: string } }).metadata?.name ?? '';
      const got = valueAt(item, this.target);
      if (got !== undefined) this.watched.set(name, got);
    }
    return list.metadata?.resourceVersion ?? '0';
  }

  /**
   * One watch, resumed from its last resourceVersion whenever the apiserver ends it (a repoint
   * rebuilds the resource's storage and closes every watch), as an informer does.
   */
  private async watch(fromVersion: string): Promise<void> {
    let rv = fromVersion;
    let first = true;
    while (!this.watchAbort.signal.aborted) {
      if (!first) this.watchResumes++;
      first = false;
      try {
        const res = await send(
          this.target.kc,
          HttpMethod.GET,
          this.url(this.collection(), {
            watch: '1',
            resourceVersion: rv,
            allowWatchBookmarks: 'true',
            labelSelector: `${RUN_LABEL}=${this.opts.run}`,
          }),
          { signal: this.watchAbort.signal },
        );
        if (res.status === 429) {
          this.throttledRetries++;
          await res.text();
          await systemClock.sleep(1000);
          continue;
        }
        if (res.status !== 200 || !res.body) {
          this.fail('watch', undefined, res.status, messageOf(await res.text()));
          await systemClock.sleep(500);
          continue;
        }
        const next = await this.readEvents(res.body, rv);
        if (next !== 'gone') {
          rv = next;
          continue;
        }
        // As client-go's reflector does: the resourceVersion is gone, list again and watch from there.
        this.relists++;
        rv = (await this.relist()) ?? rv;
      } catch (err) {
        if (this.watchAbort.signal.aborted) return;
        this.fail('watch', undefined, undefined, (err as Error).message);
        await systemClock.sleep(500);
      }
    }
  }

  /** Applies a watch stream's events; returns the last resourceVersion seen, or 'gone' on 410. */
  private async readEvents(body: ReadableStream<Uint8Array>, fromVersion: string): Promise<string | 'gone'> {
    let rv: string | 'gone' = fromVersion;
    let buffered = '';
    const decoder = new TextDecoder();
    for await (const chunk of body) {
      buffered += decoder.decode(chunk, { stream: true });
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.trim() === '') continue;
        rv = this.applyEvent(JSON.parse(line) as WatchEvent, rv);
        if (rv === 'gone') return rv;
      }
    }
    return rv;
  }

  private applyEvent(event: WatchEvent, rv: string): string | 'gone' {
    const name = event.object?.metadata?.name ?? '';
    const version = event.object?.metadata?.resourceVersion ?? rv;
    switch (event.type) {
      case 'BOOKMARK':
        return version;
      case 'ERROR':
        if (event.object?.code === 410) return 'gone';
        this.fail('watch', undefined, event.object?.code, event.object?.message ?? 'watch ERROR event');
        return rv;
      case 'DELETED':
        this.watched.delete(name);
        return version;
      default: {
        this.watchEvents++;
        this.byOp.watch++;
        const got = valueAt(event.object, this.target);
        const expected = this.expected.get(name);
        if (got === undefined || (expected && !expected.everWritten(got)))
          this.wrong('watch', name, expected?.allWritten() ?? [], got);
        if (got !== undefined) this.watched.set(name, got);
        return version;
      }
    }
  }
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object?: {
    apiVersion?: string;
    metadata?: { name?: string; resourceVersion?: string };
    code?: number;
    message?: string;
  };
}

/** The checked value, only when the object is at the load's version (an unconverted one is wrong). */
function valueAt(object: unknown, target: LoadTarget): string | undefined {
  const o = object as { apiVersion?: string; spec?: Record<string, unknown> } | undefined;
  if (o?.apiVersion !== `${target.group}/${target.version}`) return undefined;
  const value = o.spec?.[target.field];
  return typeof value === 'string' ? value : undefined;
}

function messageOf(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text.slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}
