/** Runs tasks one at a time per key, in submission order; different keys run concurrently. */
export class SerialQueues {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly onError: (key: string, err: unknown) => void;

  constructor(onError: (key: string, err: unknown) => void) {
    this.onError = onError;
  }

  run(key: string, task: () => Promise<void>): Promise<void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(task).catch((err) => this.onError(key, err));
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }
}
