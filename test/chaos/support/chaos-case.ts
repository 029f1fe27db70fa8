// One chaos case: a move under the running load with one fault injected while it is under way,
// and everything the issue asks of it, counted in the case's own window:
//
//   window opens   load tally, the apiserver's conversion count for the target, DLQ's last sequence
//   the move       the write that changes the assignment
//   the fault      a drawn (seeded) or fixed delay after the write; the fault runs its own
//                  timeline (kill and restart, freeze and thaw, …)
//   convergence    HandoverReady=True reason HandoverReady about the destination, the status
//                  assigning it, and the CRD naming its Service (polled; the time is the figure)
//   after          what the fault still does once the move is done (a wedged replica's Lease
//                  going stale, then it resumes), then the load runs on for the source's drain
//   the streams    WORK and FANOUT drained, no new dead letter
//   window closes  the same counts again; the repoints the witness saw, the CRD writes the
//                  apiserver audited
//
// `violations` turns the result into what must not happen, each said with what it would mean in
// production; a case passes when there is none. The negative control asserts the opposite.
import type { KubeConfig } from '@kubernetes/client-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { DeadLetterEntry } from '../../../src/bus/dead-letters.ts';
import {
  apiserverConversions,
  type Conversions,
  totalOf,
} from '../../../src/scenario/apiserver-conversions.ts';
import type {
  ConversionLoad,
  Failure,
  LoadTally,
  WrongValue,
} from '../../../src/scenario/conversion-load.ts';
import { configStatus, handoverReady, servingInstances } from '../../../src/scenario/fleet.ts';
import type { HandoverWitness, Repoint } from '../../e2e/support/handover-witness.ts';
import type { AuditEvent } from '../../support/audit-log.ts';
import {
  deadLetterMark,
  deadLettersSince,
  describeDeadLetter,
  type WorkLeft,
  waitWorkDrained,
} from './bus-outcomes.ts';
import type { Move } from './moves.ts';

/** What a case moves, and who watches: the target, its config, the load on it. */
export interface Subject {
  admin: KubeConfig;
  config: string;
  target: string;
  /** Every instance whose Service a target may name (to read which one it names). */
  instances: readonly string[];
  load: ConversionLoad;
  witness: HandoverWitness;
  jsm: JetStreamManager;
  /** The apiserver's audit events so far (read incrementally). */
  audit: () => Promise<AuditEvent[]>;
  /** The only identity that may write a target's conversion: the handover's ServiceAccount. */
  handoverUser: string;
}

export interface FaultContext {
  move: Move;
  random: () => number;
  /** Call right before the apiserver goes away: its conversion count restarts from zero after. */
  apiserverGoingDown(): Promise<void>;
  /** Call once it is ready again: client failures from `apiserverGoingDown` to now are excluded. */
  apiserverBack(): void;
  /** Adds a line to the case's figures (which Pod, how long frozen, …). */
  note(line: string): void;
  /** Something the fault itself demands did not happen (a wedged replica's Lease never went stale). */
  fail(line: string): void;
  /**
   * Pods the fault deleted: their Leases go with them (the garbage collector), so the recorded
   * stream may show one as a ready Pod without a Lease at the repoint, when the gate decided
   * while it was alive and reporting and it died before the repoint was recorded.
   */
  deleted(pods: readonly string[]): void;
}

export interface Fault {
  name: string;
  /** `at-once`: right after the move's write; `drawn`: after a seeded delay below `MAX_FAULT_DELAY_MS`. */
  delay: 'at-once' | 'drawn';
  inject(ctx: FaultContext): Promise<void>;
  /** Runs once the move converged (or gave up), before the stream checks. */
  afterConverged?(ctx: FaultContext): Promise<void>;
}

/** A drawn delay lands the fault anywhere from before the assignment to just after the repoint. */
export const MAX_FAULT_DELAY_MS = 1_000;

export interface CaseTiming {
  moveTimeoutMs: number;
  /** Load kept running after convergence: the source's drain and the storage rebuild happen here. */
  settleMs: number;
  drainTimeoutMs: number;
}

export interface CaseResult {
  fault: string;
  target: string;
  move: Move;
  /** From the move's write, ms. */
  faultAtMs: number;
  repointAtMs: number | undefined;
  notes: string[];
  /** What the fault's own checks found wrong (`FaultContext.fail`). */
  faultProblems: string[];
  /** Pods the fault deleted (`FaultContext.deleted`). */
  deletedPods: string[];
  requests: number;
  failures: Failure[];
  /** Client failures while the apiserver was down: not counted (the issue excludes them). */
  excludedFailures: number;
  wrongValues: WrongValue[];
  conversions: Conversions;
  /** The state already verified before the write (the previous case left it converged). */
  startedConverged: boolean;
  converged: { ok: true; afterMs: number } | { ok: false; lastSeen: string };
  repoints: Repoint[];
  work: { drained: true } | { drained: false; left: WorkLeft };
  deadLetters: DeadLetterEntry[];
  /** Writes of the target CRD by anyone but the handover that the apiserver did not refuse. */
  foreignWrites: AuditEvent[];
  /** The handover's writes of the target CRD that the apiserver did not refuse. */
  handoverWrites: number;
  throttledRetries: number;
  watchResumes: number;
  relists: number;
}

export async function runCase(
  subject: Subject,
  move: Move,
  fault: Fault,
  random: () => number,
  timing: CaseTiming,
): Promise<CaseResult> {
  const { admin, target, load, witness, jsm } = subject;
  const notes: string[] = [];
  const faultProblems: string[] = [];
  const deletedPods: string[] = [];
  // The previous move's verdict, or the first apply's: any True verdict about the source.
  const startedConverged = (await verifiedState(subject, move.from, ['HandoverReady', 'FirstApply'])).ok;
  const before = load.tally();
  const dlqMark = await deadLetterMark(jsm);
  let conversionsBefore = await targetConversions(admin, target);
  let banked: Conversions = { succeeded: 0, failed: 0 };
  let excluded: { fromMs: number; toMs: number } | undefined;
  let downAtMs: number | undefined;
  const ctx: FaultContext = {
    move,
    random,
    async apiserverGoingDown() {
      const now = await targetConversions(admin, target);
      banked = minus(now, conversionsBefore);
      conversionsBefore = { succeeded: 0, failed: 0 };
      downAtMs = load.tally().atMs;
    },
    apiserverBack() {
      excluded = { fromMs: downAtMs ?? load.tally().atMs, toMs: load.tally().atMs };
    },
    note: (line) => notes.push(line),
    fail: (line) => faultProblems.push(line),
    deleted: (pods) => deletedPods.push(...pods),
  };

  const delayMs = fault.delay === 'at-once' ? 0 : Math.floor(random() * MAX_FAULT_DELAY_MS);
  const writeAt = Date.now();
  await move.change();
  if (delayMs > 0) await sleep(delayMs);
  const faultAtMs = Date.now() - writeAt;
  await fault.inject(ctx);

  const converged = await converge(subject, move.to, timing.moveTimeoutMs, writeAt);
  await fault.afterConverged?.(ctx);
  await sleep(timing.settleMs);
  const work = await waitWorkDrained(jsm, timing.drainTimeoutMs);
  const deadLetters = await deadLettersSince(jsm, dlqMark);

  const after = load.tally();
  const conversions = plus(banked, minus(await targetConversions(admin, target), conversionsBefore));
  const windowFailures = after.failures.slice(before.failures.length);
  const failures = windowFailures.filter(
    (f) => !excluded || f.atMs < excluded.fromMs || f.atMs > excluded.toMs,
  );
  const repoints = witness.repoints.filter((r) => r.target === target && r.atMs >= writeAt);
  // Every write the apiserver did not refuse: a 5xx may have been applied (a writer killed while
  // its patch was in flight is answered 504, and the patch stands).
  const crdWrites = (await subject.audit()).filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.objectRef?.resource === 'customresourcedefinitions' &&
      e.objectRef.name === target &&
      ['create', 'update', 'patch', 'delete'].includes(e.verb) &&
      !isRefused(e.responseStatus?.code) &&
      Date.parse(e.requestReceivedTimestamp) >= writeAt,
  );
  return {
    fault: fault.name,
    target,
    move,
    faultAtMs,
    repointAtMs: repoints[0] === undefined ? undefined : repoints[0].atMs - writeAt,
    notes,
    faultProblems,
    deletedPods,
    requests: after.requests - before.requests,
    failures,
    excludedFailures: windowFailures.length - failures.length,
    wrongValues: after.wrongValues.slice(before.wrongValues.length),
    conversions,
    startedConverged,
    converged,
    repoints,
    work,
    deadLetters,
    foreignWrites: crdWrites.filter((e) => e.user.username !== subject.handoverUser),
    handoverWrites: crdWrites.filter((e) => e.user.username === subject.handoverUser).length,
    ...countsBetween(before, after),
  };
}

function isRefused(code: number | undefined): boolean {
  return code !== undefined && code >= 400 && code < 500;
}

function countsBetween(before: LoadTally, after: LoadTally) {
  return {
    throttledRetries: after.throttledRetries - before.throttledRetries,
    watchResumes: after.watchResumes - before.watchResumes,
    relists: after.relists - before.relists,
  };
}

/**
 * Everything the issue demands of a case, each broken demand said with what it means for the
 * users of the target; empty when the case passed.
 */
export function violations(r: CaseResult): string[] {
  const out: string[] = [];
  const where = `${r.fault}, during "${r.move.what}" (${r.move.from} → ${r.move.to})`;
  for (const problem of r.faultProblems) out.push(`${where}: ${problem}`);
  if (!r.startedConverged)
    out.push(
      `${where}: the previous case left the target unconverged, so this move started from a broken state`,
    );
  if (r.failures.length > 0)
    out.push(
      `${where}: ${r.failures.length} client requests failed — users' kubectl and controllers got errors ` +
        `reading or writing ${r.target} objects: ${failureKinds(r.failures)}`,
    );
  if (r.wrongValues.length > 0)
    out.push(
      `${where}: ${r.wrongValues.length} wrong values — clients were answered with data that was never written: ` +
        JSON.stringify(r.wrongValues.slice(0, 3)),
    );
  if (r.conversions.failed > 0)
    out.push(
      `${where}: the apiserver counted ${r.conversions.failed} failed conversions — watches were cut and ` +
        'requests failed inside the apiserver, invisible to clients',
    );
  if (!r.converged.ok)
    out.push(
      `${where}: the move never converged to a verified HandoverReady on ${r.move.to} — the target is stuck ` +
        `(last seen: ${r.converged.lastSeen})`,
    );
  const expected = `${r.move.from}→${r.move.to}`;
  const seen = r.repoints.map((p) => `${p.from}→${p.to}`);
  if (seen.length !== 1 || seen[0] !== expected)
    out.push(
      `${where}: the witness saw the conversion repointed ${seen.length} times (${seen.join(', ') || 'none'}), ` +
        `expected exactly once ${expected} — a duplicate or missing side effect on the CRD`,
    );
  for (const p of r.repoints) {
    const unreported = p.readyPods.filter(
      (pod) => !pod.reported && !(r.deletedPods.includes(pod.pod) && pod.why === 'no served-set Lease'),
    );
    if (p.readyPods.length === 0 || unreported.length > 0)
      out.push(
        `${where}: repointed ${p.from}→${p.to} while ${
          p.readyPods.length === 0
            ? 'the destination had no ready Pod'
            : `ready Pods had not reported the target (${unreported.map((u) => `${u.pod}: ${u.why}`).join('; ')})`
        } — the apiserver could send conversions to a replica without the plan`,
      );
  }
  if (!r.work.drained)
    out.push(
      `${where}: work left on the bus once quiet (${r.work.left.work} on WORK: ${JSON.stringify(
        r.work.left.workSubjects,
      )}; ${r.work.left.fanout} on FANOUT) — a work item never reached a terminal outcome`,
    );
  if (r.deadLetters.length > 0)
    out.push(
      `${where}: ${r.deadLetters.length} new dead letters — work given up on: ${r.deadLetters
        .map(describeDeadLetter)
        .join(' | ')}`,
    );
  if (r.foreignWrites.length > 0)
    out.push(
      `${where}: the target CRD was written by someone other than the handover: ${r.foreignWrites
        .map((e) => `${e.user.username} ${e.verb}`)
        .join(', ')} — the conversion was changed outside the gate`,
    );
  return out;
}

/** The one line per case that docs/reliability.md's table is made from. */
export function figureLine(r: CaseResult): string {
  const repoint =
    r.repointAtMs === undefined
      ? 'no repoint'
      : `repoint +${seconds(r.repointAtMs)} (${r.faultAtMs <= r.repointAtMs ? 'fault before it' : 'fault after it'})`;
  const gate = r.repoints[0]
    ? `, ${r.repoints[0].readyPods.filter((p) => p.reported).length}/${r.repoints[0].readyPods.length} ready destination Pods had reported`
    : '';
  const converged = r.converged.ok ? `converged in ${seconds(r.converged.afterMs)}` : 'DID NOT CONVERGE';
  const work = r.work.drained
    ? 'work drained'
    : `WORK ${r.work.left.work} / FANOUT ${r.work.left.fanout} left`;
  return (
    `[chaos] ${r.fault} | ${r.move.kind} ${r.move.from}→${r.move.to} | fault +${seconds(r.faultAtMs)}, ${repoint}${gate} | ` +
    `${r.requests} requests, ${r.failures.length} failed${
      r.excludedFailures > 0 ? ` (${r.excludedFailures} while the apiserver was down, excluded)` : ''
    }, ${r.wrongValues.length} wrong values | apiserver conversions ${r.conversions.succeeded} ok / ${
      r.conversions.failed
    } failed | ${converged} | ${work}, ${r.deadLetters.length} dead letters, ${r.repoints.length} repoints, ` +
    `${r.handoverWrites} handover CRD writes | absorbed: ${r.throttledRetries} 429s, ${r.watchResumes} watch resumes, ` +
    `${r.relists} relists${r.notes.length > 0 ? ` | ${r.notes.join('; ')}` : ''}`
  );
}

/** Failures grouped by operation, status and message (object names left out). */
export function failureKinds(failures: readonly Failure[]): string {
  const kinds = new Map<string, number>();
  for (const f of failures) {
    const key = `${f.op} ${f.status ?? '-'} ${f.message.replace(/[a-z0-9-]+-w\d+-o\d+/g, '<object>').slice(0, 400)}`;
    kinds.set(key, (kinds.get(key) ?? 0) + 1);
  }
  return [...kinds].map(([k, n]) => `${n}× ${k}`).join(' | ');
}

/** Polls until the move to `to` is verified; how long it took from the write, or what was last seen. */
async function converge(
  subject: Subject,
  to: string,
  timeoutMs: number,
  writeAt: number,
): Promise<CaseResult['converged']> {
  const deadline = Date.now() + timeoutMs;
  let lastSeen = 'nothing read';
  while (Date.now() < deadline) {
    const state = await verifiedState(subject, to, ['HandoverReady']).catch((err: Error) => ({
      ok: false,
      seen: err.message,
    }));
    if (state.ok) return { ok: true, afterMs: Date.now() - writeAt };
    lastSeen = state.seen;
    await sleep(250);
  }
  return { ok: false, lastSeen };
}

/**
 * The move to `to` is done and verified: the status assigns `to`, its HandoverReady is True with
 * one of `reasons` (a move: HandoverReady, never the unverified fallback) about `to`, and the
 * CRD names `to`'s Service.
 */
async function verifiedState(
  subject: Subject,
  to: string,
  reasons: readonly string[],
): Promise<{ ok: boolean; seen: string }> {
  const status = await configStatus(subject.admin, subject.config);
  const ready = handoverReady(status);
  const serving = (await servingInstances(subject.admin, subject.instances)).get(subject.target);
  const seen =
    `assigned ${status?.assignedWebhookServer}, HandoverReady ${ready?.status}/${ready?.reason} ` +
    `about ${status?.handoverDestination} (${ready?.message ?? ''}), CRD names ${serving}`;
  const ok =
    status?.assignedWebhookServer === to &&
    status.handoverDestination === to &&
    ready?.status === 'True' &&
    reasons.includes(ready.reason) &&
    serving === to;
  return { ok, seen };
}

async function targetConversions(admin: KubeConfig, target: string): Promise<Conversions> {
  return totalOf(await apiserverConversions(admin), [target]);
}

function minus(a: Conversions, b: Conversions): Conversions {
  return { succeeded: a.succeeded - b.succeeded, failed: a.failed - b.failed };
}

function plus(a: Conversions, b: Conversions): Conversions {
  return { succeeded: a.succeeded + b.succeeded, failed: a.failed + b.failed };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
