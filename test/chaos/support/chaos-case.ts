// One chaos case: a move under the running load with one fault injected while it is under way,
// and everything the issue asks of it, counted in the case's own window:
//
//   window opens   load tally, the apiserver's conversion count for the target, DLQ's last sequence
//   the move       the write that changes the assignment
//   the fault      a drawn (seeded) delay after the write, at once, or once the gate is
//                  confirming the destination; the fault runs its own timeline (kill and
//                  restart, freeze and thaw, …)
//   convergence    HandoverReady=True reason HandoverReady about the destination, the status
//                  assigning it, and the CRD naming its Service (polled; the time is the figure)
//   after          what the fault still does once the move is done (a wedged replica's Lease
//                  going stale, then it resumes), then the load runs on for the source's drain
//   the streams    WORK and FANOUT drained, no new dead letter
//   window closes  the same counts again; the repoints the witness saw, the CRD writes the
//                  apiserver audited
//
// `violations` turns the result into what must not happen, each said with what it would mean in
// production; a case passes when there is none. A case that kills a replica the target names
// (the source) is judged by what the kill explains instead of by 0 failures (killed-replica.ts).
// The negative control asserts the opposite.
import type { KubeConfig } from '@kubernetes/client-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import { webhookServiceName } from '../../../src/api/constants.ts';
import type { DeadLetterEntry } from '../../../src/bus/dead-letters.ts';
import type { HandoverOnView } from '../../../src/handlers/handover.ts';
import type { PodRef } from '../../../src/local-cluster/pod-faults.ts';
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
import {
  accountFor,
  type KilledReplicaAccount,
  type KilledReplicaObserved,
  KilledReplicaWatch,
  WITHDRAWN_BOUND_MS,
} from './killed-replica.ts';
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
   * Destination Pods the fault killed or wedged before the repoint: the gate must not count
   * one among the destination's ready Pods when it repoints.
   */
  victims(pods: readonly string[]): void;
  /**
   * Runs `kill` on a replica of `instance`, an instance the target names (or named until just
   * before: the old storage still calls it), and judges the case by what the kill explains
   * (killed-replica.ts) instead of by 0 failures.
   * `othersAlive` says whether every other replica of the instance is still the process it was.
   */
  killOnDataPath(
    pod: PodRef,
    instance: string,
    kill: () => Promise<void>,
    othersAlive: () => boolean,
  ): Promise<void>;
}

export interface Fault {
  name: string;
  /**
   * `at-once`: right after the move's write; `drawn`: after a seeded delay below
   * `MAX_FAULT_DELAY_MS`; `confirming`: once the config's status assigns the destination and
   * shows the gate confirming it (every ready destination Pod counted, the fault's victim among
   * them), so the fault lands while the move waits and before the repoint (a violation if not).
   */
  delay: 'at-once' | 'drawn' | 'confirming';
  inject(ctx: FaultContext): Promise<void>;
  /** Runs once the move converged (or gave up), before the stream checks. */
  afterConverged?(ctx: FaultContext): Promise<void>;
}

/**
 * A drawn delay lands the fault anywhere from before the assignment to just after the repoint:
 * a verified move waits handover.confirmSeconds (10 s) before it, and takes 10–16 s here.
 */
export const MAX_FAULT_DELAY_MS = 12_000;

/** How long a converged move's repoint may take to reach the witness's view (see below). */
const WITNESS_LATE_MS = 30_000;

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
  delay: Fault['delay'];
  /** From the move's write, ms. */
  faultAtMs: number;
  /** For a `confirming` delay: the status showed the gate confirming the destination before the fault. */
  landedWhileConfirming: boolean;
  repointAtMs: number | undefined;
  notes: string[];
  /** What the fault's own checks found wrong (`FaultContext.fail`). */
  faultProblems: string[];
  /** Destination Pods the fault killed or wedged (`FaultContext.victims`). */
  victims: string[];
  requests: number;
  failures: Failure[];
  /** For a case that killed a replica the target named: what the kill explains (`FaultContext.killOnDataPath`). */
  killedReplica: KilledReplicaAccount | undefined;
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
  const victims: string[] = [];
  let killWatch: KilledReplicaWatch | undefined;
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
    victims: (pods) => victims.push(...pods),
    async killOnDataPath(pod, instance, kill, othersAlive) {
      killWatch = await KilledReplicaWatch.before({
        kc: admin,
        target,
        namespace: pod.namespace,
        service: webhookServiceName(instance),
        pod: pod.name,
        clock: () => load.tally().atMs,
        othersAlive,
      });
      killWatch.killing();
      await kill();
    },
  };

  const delayMs = fault.delay === 'drawn' ? Math.floor(random() * MAX_FAULT_DELAY_MS) : 0;
  const writeAt = Date.now();
  await move.change();
  if (delayMs > 0) await sleep(delayMs);
  const landedWhileConfirming =
    fault.delay === 'confirming' && (await untilConfirming(subject, move.to, timing.moveTimeoutMs));
  const faultAtMs = Date.now() - writeAt;
  await fault.inject(ctx);

  const converged = await converge(subject, move.to, timing.moveTimeoutMs, writeAt);
  await fault.afterConverged?.(ctx);
  await sleep(timing.settleMs);
  const work = await waitWorkDrained(jsm, timing.drainTimeoutMs);
  const deadLetters = await deadLettersSince(jsm, dlqMark);
  const killed: KilledReplicaObserved | undefined = await killWatch?.finish();

  const after = load.tally();
  const conversionsAtClose = await targetConversions(admin, target);
  const conversions = plus(banked, minus(conversionsAtClose, conversionsBefore));
  const windowFailures = after.failures.slice(before.failures.length);
  const failures = windowFailures.filter(
    (f) => !excluded || f.atMs < excluded.fromMs || f.atMs > excluded.toMs,
  );
  // The witness follows the bus from the test process: after a NATS restart its own consumer may
  // resume seconds after the handlers'. A repoint the CRD already shows is waited for (30 s), so
  // a late witness is not read as a missing side effect; one that never comes still fails.
  const seenByWitness = () => witness.repoints.filter((r) => r.target === target && r.atMs >= writeAt);
  if (converged.ok)
    for (let waited = 0; seenByWitness().length === 0 && waited < WITNESS_LATE_MS; waited += 250)
      await sleep(250);
  const repoints = seenByWitness();
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
    delay: fault.delay,
    faultAtMs,
    landedWhileConfirming,
    repointAtMs: repoints[0] === undefined ? undefined : repoints[0].atMs - writeAt,
    notes,
    faultProblems,
    victims,
    requests: after.requests - before.requests,
    failures,
    killedReplica:
      killed && accountFor(killed, failures, conversionsBefore.failed, conversionsAtClose.failed),
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
  if (r.delay === 'confirming' && !r.landedWhileConfirming)
    out.push(
      `${where}: the fault was to land while the gate confirmed the destination, and the status never showed ` +
        'it confirming first — the case did not test what it claims',
    );
  if (r.delay === 'confirming' && r.repointAtMs !== undefined && r.repointAtMs <= r.faultAtMs)
    out.push(`${where}: the fault landed after the repoint — the case did not test the gate`);
  const unexplained = r.killedReplica ? r.killedReplica.unexplained : r.failures;
  if (unexplained.length > 0)
    out.push(
      `${where}: ${unexplained.length} client requests failed${
        r.killedReplica ? ' that the killed replica does not explain' : ''
      } — users' kubectl and controllers got errors reading or writing ${r.target} objects: ${failureKinds(unexplained)}`,
    );
  if (r.wrongValues.length > 0)
    out.push(
      `${where}: ${r.wrongValues.length} wrong values — clients were answered with data that was never written: ` +
        JSON.stringify(r.wrongValues.slice(0, 3)),
    );
  if (r.killedReplica) out.push(...killedReplicaViolations(where, r.killedReplica));
  else if (r.conversions.failed > 0)
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
    const victims = p.readyPods.filter((pod) => r.victims.includes(pod.pod)).map((pod) => pod.pod);
    if (victims.length > 0)
      out.push(
        `${where}: repointed ${p.from}→${p.to} while ${victims.join(', ')}, killed or wedged by the fault before it, ` +
          "still counted among the destination's ready Pods — the apiserver sent conversions to a replica that cannot answer",
      );
    const unreported = p.readyPods.filter((pod) => !pod.reported);
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

/** What a case that killed a replica the target named must show instead of 0 failed conversions. */
function killedReplicaViolations(where: string, k: KilledReplicaAccount): string[] {
  const out: string[] = [];
  if (k.withdrawnAtMs === undefined)
    out.push(
      `${where}: ${k.pod}'s endpoint was still listed ready a minute after it was killed — the apiserver ` +
        'goes on sending conversions to a dead replica',
    );
  else if (!k.sampledPastBound)
    out.push(
      `${where}: the apiserver's conversion count was never read past the bound — the account is incomplete`,
    );
  if (k.failedBeforeKill > 0)
    out.push(
      `${where}: the apiserver counted ${k.failedBeforeKill} failed conversions before ${k.pod} was killed — ` +
        'failures the kill does not explain',
    );
  if (k.failedAfterBound > 0)
    out.push(
      `${where}: the apiserver counted ${k.failedAfterBound} failed conversions more than ${WITHDRAWN_BOUND_MS / 1000} s ` +
        `after ${k.pod}'s endpoint was withdrawn — conversions failing once the dead replica is out of the Service`,
    );
  if (!k.othersAlive)
    out.push(
      `${where}: another replica of ${k.pod}'s instance died during the case — a second replica lost, ` +
        "and its failures cannot be told from the killed one's",
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
  const confirming = r.landedWhileConfirming ? ' (while the gate confirmed)' : '';
  const k = r.killedReplica;
  const explained = k
    ? ` (${k.dialed.length} dialed to the killed Pod, ${k.cut.length} cut mid-call, ${k.unexplained.length} unexplained)`
    : '';
  return (
    `[chaos] ${r.fault} | ${r.move.kind} ${r.move.from}→${r.move.to} | fault +${seconds(r.faultAtMs)}${confirming}, ${repoint}${gate} | ` +
    `${r.requests} requests, ${r.failures.length} failed${explained}${
      r.excludedFailures > 0 ? ` (${r.excludedFailures} while the apiserver was down, excluded)` : ''
    }, ${r.wrongValues.length} wrong values | apiserver conversions ${r.conversions.succeeded} ok / ${
      r.conversions.failed
    } failed${k ? ` (${killedReplicaFigures(k)})` : ''} | ${converged} | ${work}, ${r.deadLetters.length} dead letters, ${r.repoints.length} repoints, ` +
    `${r.handoverWrites} handover CRD writes | absorbed: ${r.throttledRetries} 429s, ${r.watchResumes} watch resumes, ` +
    `${r.relists} relists${r.notes.length > 0 ? ` | ${r.notes.join('; ')}` : ''}`
  );
}

/** When the killed replica's failures happened, from its kill. */
function killedReplicaFigures(k: KilledReplicaAccount): string {
  const withdrawn =
    k.withdrawnAtMs === undefined
      ? 'endpoint never withdrawn'
      : `endpoint withdrawn +${seconds(k.withdrawnAtMs - k.killedAtMs)} after the kill`;
  const first = k.rises[0];
  const last = k.rises.at(-1);
  // A sample reads the count when it ends (a read of /metrics takes up to a second on a busy
  // machine): the failures it saw happened before.
  const when =
    first && last
      ? `seen by the samples ending +${seconds(first.sinceKillMs)}…+${seconds(last.sinceKillMs)}`
      : 'none seen after it';
  const clients = [...k.dialed, ...k.cut].map((f) => f.atMs - k.killedAtMs);
  const requests =
    clients.length > 0
      ? `, failed requests +${seconds(Math.min(...clients))}…+${seconds(Math.max(...clients))}`
      : '';
  const window =
    k.withdrawnAtMs === undefined
      ? ''
      : ` of ${seconds(k.withdrawnAtMs - k.killedAtMs + WITHDRAWN_BOUND_MS)}`;
  return (
    `${k.failedInWindow} in the kill's window${window}: ${withdrawn}, ${when}${requests}; ` +
    `${k.failedBeforeKill} before the kill, ${k.failedAfterBound} past withdrawal + ${WITHDRAWN_BOUND_MS / 1000} s`
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

/**
 * Polls until the config's status assigns `to` and the gate, on a view of the bus, is confirming
 * it (every ready Pod of `to` counted; a young wait is written to no status); false when the move
 * was verified first or nothing showed within `timeoutMs`.
 */
async function untilConfirming(subject: Subject, to: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const status = await configStatus(subject.admin, subject.config).catch(() => undefined);
    if (status?.assignedWebhookServer === to && isConfirming(subject.witness.gateNow(subject.target), to))
      return true;
    if (status?.handoverDestination === to && handoverReady(status)?.status === 'True') return false;
    await sleep(100);
  }
  return false;
}

function isConfirming(gate: HandoverOnView, to: string): boolean {
  return (
    gate.kind === 'decided' &&
    gate.subject.destination === to &&
    gate.decision.action === 'wait' &&
    gate.decision.progress?.confirming !== undefined
  );
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
