// What compile derives from a rule's source text alone (a CEL program, a regular expression, a
// join template), kept by that text: a replica compiles every target it holds at start, and a
// fleet built from one template repeats the same expressions thousands of times. Only immutable
// results go in, so one may serve every rule that spells the same text. Bounded: the oldest entry
// leaves when a new one would exceed the limit, so a replica's memory does not grow with the
// distinct texts it has ever seen.

const LIMIT = 2048;

export class CompileCache<T> {
  private readonly entries = new Map<string, T>();
  private readonly limit: number;

  constructor(limit = LIMIT) {
    this.limit = limit;
  }

  /** The value for `key`, computed by `make` once. */
  get(key: string, make: () => T): T {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const made = make();
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, made);
    return made;
  }
}
