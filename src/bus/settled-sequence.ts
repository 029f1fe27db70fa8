// How far a reader of a compacting stream can vouch for what it holds.
//
// K8S_LATEST keeps only each subject's last record. A reader that falls behind never sees a
// record that was superseded before it got there: it sees the gap, and later the record that
// replaced it. Between the two, "I have applied sequence N" is false for that subject: the
// reader holds an older record of it than any state at N. In a partition of the bus one
// assign replica read seq 238 while the weight change at 235 (superseded by 237, then 241) was
// still missing, decided two configs on the old weight, and nothing woke them again.
//
// So the sequence a reader vouches for stops before the first gap, and moves on only once the
// reader has taken every message that was pending behind the gap when it was seen (one of them
// replaced the missing record, or was itself replaced, which opens a gap of its own), or has
// reached the stream's end. Gaps a filter makes (subjects the reader does not follow) hold it
// the same way: slower, never wrong.
//
// That rule alone never moves while a reader stays behind under sustained changes (every gap
// seen opens a window before the last closes). So a reader that has the history too fills a gap
// from it (`filled`, follow-latest.ts), and this rule is what is left when it cannot.

export class SettledSequence {
  private handed = 0;
  private settled = 0;
  /** Deliveries still to take before the open gaps are closed; 0 when none is open. */
  private owed = 0;

  /** The highest sequence such that every record at or below it is held, or was replaced by one held. */
  get value(): number {
    return this.settled;
  }

  /**
   * Every message up to `seq` was read from the stream this one compacts, which keeps every
   * record (K8S for K8S_LATEST): nothing at or below it is missing, so no gap opens. Returns the
   * settled sequence after it.
   */
  filled(seq: number): number {
    if (seq <= this.handed) return this.settled;
    this.handed = seq;
    if (this.owed === 0) this.settled = seq;
    return this.settled;
  }

  /**
   * One message handed to the reader, in stream order: its sequence and how many messages the
   * server still had for the reader behind it. Returns the settled sequence after it.
   */
  observe(seq: number, pending: number): number {
    if (seq <= this.handed) return this.settled;
    const gap = seq !== this.handed + 1;
    this.handed = seq;
    if (pending === 0) this.owed = 0;
    else if (gap) this.owed = Math.max(this.owed - 1, pending);
    else if (this.owed > 0) this.owed--;
    if (this.owed === 0) this.settled = seq;
    return this.settled;
  }
}
