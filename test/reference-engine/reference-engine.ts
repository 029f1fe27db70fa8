// A client for the reference conversion engine: the harness (test/reference-engine/harness) that
// scripts/lib/build-reference.sh builds against TeraSky-OSS/declarative-conversion-operator's
// engine, run as one long-lived child process speaking newline-delimited JSON. Responses are
// matched to requests by id; a request still waiting when the process ends fails with
// HarnessExited, and so does every later one (start a new client to carry on).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { z } from 'zod';

/** One version of the target as the harness takes it (storage = a CRD's storage, an XRD's referenceable). */
export interface ReferenceVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: unknown;
}

const losslessSchema = z.object({ hubToSpoke: z.boolean(), spokeToHub: z.boolean() });
export type Lossless = z.infer<typeof losslessSchema>;

const ruleResultSchema = z.object({
  index: z.number(),
  strategy: z.string(),
  hubPaths: z.array(z.string()),
  spokePaths: z.array(z.string()),
  lossless: losslessSchema,
  errors: z.array(z.string()),
  warnings: z.array(z.string()),
});
export type ReferenceRuleResult = z.infer<typeof ruleResultSchema>;

const spokeReportSchema = z.object({
  version: z.string(),
  lossless: losslessSchema,
  errors: z.array(z.string()),
  warnings: z.array(z.string()),
  ruleResults: z.array(ruleResultSchema),
  uncoveredHub: z.array(z.string()),
  uncoveredSpoke: z.array(z.string()),
});
export type ReferenceSpokeReport = z.infer<typeof spokeReportSchema>;

/** A panic inside the reference's code, recovered by the harness: its message and Go stack. */
const crashSchema = z.object({ ok: z.literal(false), crash: z.string() });
export type Crash = z.infer<typeof crashSchema>;

/** A request the harness could not act on (malformed, an unknown handle, …). */
const failureSchema = z.object({ ok: z.literal(false), error: z.string() });

/**
 * Where a refused config stopped: `decode` (the spec does not decode strictly into the
 * reference's API types), `admission` (the reference's admission webhook's structural checks),
 * `rules` (its API-to-engine rule translation), `analyze` (engine.Analyze failed outright) or
 * `spokes` (some spoke has errors; `spokes` says which).
 */
export const COMPILE_STAGES = ['decode', 'admission', 'rules', 'analyze', 'spokes'] as const;
export type CompileStage = (typeof COMPILE_STAGES)[number];

const compiledSchema = z.object({
  ok: z.literal(true),
  handle: z.number(),
  spokes: z.array(spokeReportSchema),
});
const refusedSchema = z.object({
  ok: z.literal(false),
  stage: z.enum(COMPILE_STAGES),
  error: z.string(),
  spokes: z.array(spokeReportSchema),
});
const compileResponseSchema = z.union([compiledSchema, refusedSchema, crashSchema]);
export type CompileOutcome = z.infer<typeof compileResponseSchema>;

const convertResponseSchema = z.union([
  z.object({ ok: z.literal(true), object: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.string() }),
  crashSchema,
]);
export type ConvertOutcome = z.infer<typeof convertResponseSchema>;

const benchResponseSchema = z.union([
  z.object({
    ok: z.literal(true),
    iterations: z.number(),
    nanosPerOp: z.number(),
    opsPerSecond: z.number(),
  }),
  failureSchema,
  crashSchema,
]);
export type BenchOutcome = z.infer<typeof benchResponseSchema>;

const releaseResponseSchema = z.union([z.object({ ok: z.literal(true) }), failureSchema, crashSchema]);

const envelopeSchema = z.looseObject({ id: z.number().optional() });

/** The harness process ended (or could not start); nothing more can be asked of it. */
export class HarnessExited extends Error {
  override readonly name = 'HarnessExited';
}

/** The harness did not answer a request in time. */
export class HarnessTimeout extends Error {
  override readonly name = 'HarnessTimeout';
}

interface Pending {
  resolve: (response: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export interface ReferenceEngineOptions {
  /** The harness binary; defaults to SWITCHYARD_REFERENCE_HARNESS. */
  harness?: string;
  /** How long one request may take before it fails with HarnessTimeout (default 60 s). */
  timeoutMs?: number;
  /** Extra environment for the harness process (e.g. GOMAXPROCS for a benchmark). */
  env?: Record<string, string>;
}

/** The path of the harness scripts/lib/build-reference.sh built, or a clear error. */
export function referenceHarnessPath(): string {
  const path = process.env.SWITCHYARD_REFERENCE_HARNESS;
  if (!path)
    throw new Error(
      'SWITCHYARD_REFERENCE_HARNESS is not set: run the tests through scripts/test.sh, or `source scripts/lib/bootstrap.sh && ensure_reference` first (it builds the reference engine harness and exports the variable)',
    );
  return path;
}

const STDERR_KEPT = 8192;

export class ReferenceEngine {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<number, Pending>();
  private readonly timeoutMs: number;
  private nextId = 1;
  private stderrTail = '';
  private exited: HarnessExited | undefined;

  private constructor(child: ChildProcessWithoutNullStreams, timeoutMs: number) {
    this.child = child;
    this.timeoutMs = timeoutMs;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEPT);
    });
    createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
      this.onLine(line),
    );
    child.on('error', (err) => this.fail(`the harness could not run: ${err.message}`));
    child.on('exit', (code, signal) =>
      this.fail(`the harness exited (${signal ? `signal ${signal}` : `code ${code}`})`),
    );
    // A harness that stops reading makes writes fail with EPIPE: the exit handler reports it.
    child.stdin.on('error', () => {});
  }

  /** Starts the harness. */
  static start(options: ReferenceEngineOptions = {}): ReferenceEngine {
    const harness = options.harness ?? referenceHarnessPath();
    const child = spawn(harness, [], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    return new ReferenceEngine(child, options.timeoutMs ?? 60_000);
  }

  /**
   * Compiles a config's spec (as a user writes it, in the reference's API shape) against the
   * target's versions, as the reference operator's admission webhook, controller and webhook
   * server do. A handle comes back only when every spoke compiled; release it when done.
   */
  async compile(spec: unknown, versions: readonly ReferenceVersion[]): Promise<CompileOutcome> {
    return compileResponseSchema.parse(await this.request({ compile: { config: spec, versions } }));
  }

  /**
   * Converts `object` (at version `from`) to version `to` as the reference's webhook server
   * answers a ConversionReview: the result's apiVersion is the review's desiredAPIVersion (the
   * object's group at `to`), and it always has metadata.
   */
  async convert(handle: number, object: unknown, from: string, to: string): Promise<ConvertOutcome> {
    return convertResponseSchema.parse(await this.request({ convert: { handle, object, from, to } }));
  }

  async release(handle: number): Promise<void> {
    const response = releaseResponseSchema.parse(await this.request({ release: handle }));
    if (!response.ok)
      throw new Error(`releasing handle ${handle}: ${'crash' in response ? response.crash : response.error}`);
  }

  /** Converts `iterations` times, from JSON bytes to encoded result each time (a webhook's work per object). */
  async bench(
    handle: number,
    object: unknown,
    from: string,
    to: string,
    iterations: number,
  ): Promise<BenchOutcome> {
    return benchResponseSchema.parse(await this.request({ bench: { handle, object, from, to, iterations } }));
  }

  /** Compiles `iterations` times (checks, rule translation, Analyze, Router), timed per iteration. */
  async benchCompile(
    spec: unknown,
    versions: readonly ReferenceVersion[],
    iterations: number,
  ): Promise<BenchOutcome> {
    return benchResponseSchema.parse(
      await this.request({ benchCompile: { config: spec, versions, iterations } }),
    );
  }

  /** Ends the harness (closing its stdin) and waits for it to exit. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }

  /** Whether the harness has ended; every request then fails with HarnessExited. */
  get alive(): boolean {
    return this.exited === undefined;
  }

  private request(body: Record<string, unknown>): Promise<unknown> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HarnessTimeout(`the harness did not answer request ${id} within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.child.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
    });
  }

  private onLine(line: string): void {
    let response: unknown;
    try {
      response = JSON.parse(line);
    } catch {
      this.fail(`the harness wrote a line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    const { id } = envelopeSchema.parse(response);
    const waiting = id === undefined ? undefined : this.pending.get(id);
    if (!waiting || id === undefined) {
      this.fail(`the harness answered a request nobody is waiting for: ${line.slice(0, 200)}`);
      return;
    }
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    waiting.resolve(response);
  }

  private fail(why: string): void {
    if (this.exited) return;
    const tail = this.stderrTail.trim();
    this.exited = new HarnessExited(tail ? `${why}; its stderr ended with:\n${tail}` : why);
    for (const [id, waiting] of this.pending) {
      clearTimeout(waiting.timer);
      waiting.reject(this.exited);
      this.pending.delete(id);
    }
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
