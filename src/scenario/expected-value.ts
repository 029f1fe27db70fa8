// What one object of the load may read as, when its writes and reads overlap. A read answers
// with the object as it was at some instant between the request and the answer, so it may show
// the value that was current when it was sent, any value whose write was in flight then, or any
// value written before the answer came; never an older one. A write whose answer was an error
// may or may not have been stored: its value stays possible until a read settles it. Pure.

/** What an object may read as, fixed when a read is sent. */
export interface ReadWindow {
  possible: ReadonlySet<string>;
  /** How many values had been written when the read was sent. */
  writtenBefore: number;
  /** No write was in flight when the read was sent. */
  quiet: boolean;
}

export class ExpectedValue {
  /** What a read sent now may return, writes in flight aside. */
  private settled: string[] = [];
  private readonly written: string[] = [];
  private readonly inFlight = new Set<string>();

  writeSent(value: string): void {
    this.written.push(value);
    this.inFlight.add(value);
  }

  writeSucceeded(value: string): void {
    this.inFlight.delete(value);
    this.settled = [value];
  }

  /** The write may have been stored anyway (only the conversion of its answer failed). */
  writeFailed(value: string): void {
    this.inFlight.delete(value);
    this.settled = [...this.settled, value];
  }

  readSent(): ReadWindow {
    return {
      possible: new Set([...this.settled, ...this.inFlight]),
      writtenBefore: this.written.length,
      quiet: this.inFlight.size === 0,
    };
  }

  /**
   * Whether a read sent at `window` may have returned `got`. A read that overlapped no write
   * settles the value; one that overlapped a write says nothing about which of them won.
   */
  readReturned(window: ReadWindow, got: string | undefined): boolean {
    if (got === undefined) return false;
    const since = this.written.slice(window.writtenBefore);
    const possible = window.possible.has(got) || since.includes(got);
    if (possible && window.quiet && since.length === 0) this.settled = [got];
    return possible;
  }

  /** A watch may show any value ever written, on the way to the last. */
  everWritten(value: string): boolean {
    return this.written.includes(value);
  }

  /** The values the object may settle at once every write is done. */
  finalValues(): string[] {
    return [...this.settled, ...this.inFlight];
  }

  allWritten(): string[] {
    return [...this.written];
  }
}
