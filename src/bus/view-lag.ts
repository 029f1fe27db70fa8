// How far a view is behind the bus, and since when: what every reader of a view must know before
// it acts on it (BRIEF §6, "every view knows its lag").
//
// A view applies records as an ordered consumer hands them over; nothing in that flow says the
// flow has stopped. After a NATS restart a view stalled for ~40 s and its replica went on
// publishing, from the stale view, a served set nobody could trust
// (shared/notes/what-a-nats-restart-does-today.md). So the view asks the server, on a period,
// for the last sequence of each stream it follows. The answer to a question sent at time T is a
// target: once the view has applied that sequence, it held, at T, everything the bus held. The
// view is *current* while such a confirmation is younger than `maxLagMs`. Under a steady stream
// of records (a rebalance writes hundreds) the view is never empty-handed at the instant of a
// question, but it reaches each answer's sequence a few milliseconds later, so it stays current;
// a view that stops applying (its consumer lost, its process starved) stops being confirmed.
//
// Not current is one of two things: *behind* (the bus answered; the view has not reached what it
// said, by up to `behindBy` sequences: an upper bound, since the latest-state stream keeps one
// record per object and leaves gaps) or *unknown* (no answer: disconnected, NATS frozen or
// restarting). Only a current view licenses a decision that needs the present state (dropping a
// plan, repointing a target, reporting a served set); the others must be said (readiness, the
// served-set Lease, a metric, a log line) and waited out.
//
// Pure: the time of every question and every observation is a parameter (monotonic ms).

export interface ViewLagPolicy {
  /** How often the view asks the server for the last sequence of each stream it follows. */
  checkEveryMs: number;
  /** A confirmation older than this no longer makes the view current. */
  maxLagMs: number;
  /**
   * A view not current for this long while it applies nothing is restarted (its ordered
   * consumers recreated from the last message applied): the client's own recovery stalled.
   * Never sooner than `maxLagMs`.
   */
  restartAfterMs: number;
}

/**
 * Asks every 2 s; current for 6 s after a confirmation (three questions: one slow answer on a
 * loaded machine does not flip it); restarted after 15 s without progress (the client looks for a
 * lost consumer every 5 s, follow-latest.ts: three of its attempts).
 */
export const DEFAULT_VIEW_LAG_POLICY: Readonly<ViewLagPolicy> = Object.freeze({
  checkEveryMs: 2_000,
  maxLagMs: 6_000,
  restartAfterMs: 15_000,
});

export type ViewLagState = 'current' | 'behind' | 'unknown';

export interface ViewLag {
  state: ViewLagState;
  /** Sequences between what the view applied and the bus's last answer (an upper bound on records); 0 when current. */
  behindBy: number | undefined;
  /** How long ago the view was last confirmed current; undefined if it never was. */
  confirmedAgoMs: number | undefined;
  /** Why it is not current, for a log line, a readiness message or a Lease; undefined when current. */
  reason: string | undefined;
}

export type LagCheck =
  /** The bus answered a question sent at `sentAtMs`: the last sequence of each followed stream, in the view's order (0: empty). */
  | { answered: true; sentAtMs: number; lastSeqs: readonly number[] }
  | { answered: false; sentAtMs: number; error: string };

/** Questions kept while the view has not reached their answers: the newest, which confirm the most. */
const MAX_OPEN_QUESTIONS = 8;

export class ViewLagTracker {
  private readonly policy: Readonly<ViewLagPolicy>;
  private confirmedAtMs: number | undefined;
  private open: { sentAtMs: number; lastSeqs: readonly number[] }[] = [];
  private last: LagCheck | undefined;
  private applied: readonly number[] = [];
  private progressAtMs: number;
  private restartedAtMs: number | undefined;

  constructor(policy: Readonly<ViewLagPolicy>, startedAtMs: number) {
    this.policy = policy;
    this.progressAtMs = startedAtMs;
  }

  /** Records the answer to a question (or its failure); a late answer to an older question never hides a newer one. */
  record(check: LagCheck): void {
    if (!this.last || check.sentAtMs >= this.last.sentAtMs) this.last = check;
    if (!check.answered) return;
    this.open.push({ sentAtMs: check.sentAtMs, lastSeqs: check.lastSeqs });
    this.open.sort((a, b) => a.sentAtMs - b.sentAtMs);
    if (this.open.length > MAX_OPEN_QUESTIONS) this.open.splice(0, this.open.length - MAX_OPEN_QUESTIONS);
    this.settle();
  }

  /** The last sequence applied from each followed stream, in the view's order, as of `nowMs`. */
  progress(seqs: readonly number[], nowMs: number): void {
    if (seqs.some((seq, i) => seq !== this.applied[i])) this.progressAtMs = nowMs;
    this.applied = [...seqs];
    this.settle();
  }

  /** Whether applying up to `seqs` would confirm an open question: a cheap test for a reader that applies often. */
  wouldSettle(seqs: readonly number[]): boolean {
    const first = this.open[0];
    return first !== undefined && reached(seqs, first.lastSeqs);
  }

  lag(nowMs: number): ViewLag {
    const confirmedAgoMs = this.confirmedAtMs === undefined ? undefined : nowMs - this.confirmedAtMs;
    if (confirmedAgoMs !== undefined && confirmedAgoMs <= this.policy.maxLagMs)
      return { state: 'current', behindBy: 0, confirmedAgoMs, reason: undefined };
    const since =
      confirmedAgoMs === undefined
        ? 'never confirmed current'
        : `last confirmed current ${Math.round(confirmedAgoMs / 1000)} s ago`;
    const newest = this.open.at(-1);
    if (this.last?.answered) {
      const behindBy = newest ? distance(this.applied, newest.lastSeqs) : 0;
      return {
        state: 'behind',
        behindBy,
        confirmedAgoMs,
        reason: `up to ${behindBy} records behind the bus (${since})`,
      };
    }
    const why = this.last ? `the bus did not answer: ${this.last.error}` : 'not checked yet';
    return { state: 'unknown', behindBy: undefined, confirmedAgoMs, reason: `${why} (${since})` };
  }

  /**
   * Whether to recreate the view's consumers now: not current, nothing applied for
   * `restartAfterMs` although the bus answered with more, and no restart within that time.
   */
  shouldRestart(nowMs: number): boolean {
    const wait = Math.max(this.policy.restartAfterMs, this.policy.maxLagMs);
    const lag = this.lag(nowMs);
    if (lag.state !== 'behind') return false;
    if (nowMs - this.progressAtMs < wait) return false;
    return this.restartedAtMs === undefined || nowMs - this.restartedAtMs >= wait;
  }

  restarted(nowMs: number): void {
    this.restartedAtMs = nowMs;
  }

  // The bus's last sequences only grow, so answers sorted by when they were asked have growing
  // targets: the view settles them in order.
  private settle(): void {
    let settled: number | undefined;
    for (let first = this.open[0]; first && reached(this.applied, first.lastSeqs); first = this.open[0]) {
      settled = first.sentAtMs;
      this.open.shift();
    }
    if (settled !== undefined) this.confirmedAtMs = Math.max(this.confirmedAtMs ?? settled, settled);
  }
}

function reached(applied: readonly number[], targets: readonly number[]): boolean {
  return targets.every((target, i) => (applied[i] ?? 0) >= target);
}

function distance(applied: readonly number[], targets: readonly number[]): number {
  return targets.reduce((n, target, i) => n + Math.max(0, target - (applied[i] ?? 0)), 0);
}

/** A view that did not reach what a decision needs in time: not the message's fault, so it is retried (runtime/errors.ts). */
export class ViewBehindError extends Error {
  override readonly name = 'ViewBehindError';
  readonly lag: ViewLag;

  constructor(message: string, lag: ViewLag) {
    super(message);
    this.lag = lag;
  }
}
