/**
 * The NATS server's clock as this replica sees it (the adapter over
 * `clock-offset.ts`): local time plus an offset sampled by writing this
 * replica's `clock.<owner>` key in the slot bucket and reading back the
 * server's stamp. Sampled at start (before any claim) and then every
 * {@link RESAMPLE_MS}; a failed sample keeps the last estimate.
 */
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import { retryWhileBusUnavailable } from '../runtime/while-unavailable.ts';
import { correctionMs, nextOffset, type OffsetSample, offsetFromWrite } from './clock-offset.ts';

/** Clocks drift by ppm and NTP steps are rare: every 30 s is far more often than either needs. */
export const RESAMPLE_MS = 30_000;
/** A sample this tight always replaces the estimate; a 20 ms slot at 50/s is the precision that matters. */
const ACCEPTABLE_UNCERTAINTY_MS = 10;
/** Offsets within this are left uncorrected (see `correctionMs`): synced clocks, measured within a few ms. */
export const CLOCK_DEAD_BAND_MS = 50;
export class ServerClock {
  private estimate: OffsetSample | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly kv: KV;
  private readonly key: string;
  private readonly local: () => number;
  private readonly log: Logger;

  constructor(opts: { kv: KV; owner: string; local?: () => number; log: Logger }) {
    this.kv = opts.kv;
    this.key = `clock.${opts.owner.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    this.local = opts.local ?? Date.now;
    this.log = opts.log;
  }

  /** Takes the first sample (rejects if it fails: claiming on an unknown skew could double the rate), then resamples. */
  async start(): Promise<void> {
    // A slot bucket just created on a cluster answers once its replicas have a leader.
    await retryWhileBusUnavailable('sampling the server clock', () => this.sample(), { log: this.log });
    this.log.info(
      { offsetMs: this.estimate?.offsetMs, uncertaintyMs: this.estimate?.uncertaintyMs },
      'clock offset to the NATS server',
    );
    this.timer = setInterval(() => void this.sample().catch(() => undefined), RESAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  readonly now = (): number => this.local() + correctionMs(this.estimate, CLOCK_DEAD_BAND_MS);

  get offsetMs(): number | undefined {
    return this.estimate?.offsetMs;
  }

  private async sample(): Promise<void> {
    const sent = this.local();
    const revision = await this.kv.put(this.key, String(sent));
    const acked = this.local();
    const entry = await this.kv.get(this.key, { revision });
    if (!entry) return;
    const sample = offsetFromWrite(sent, acked, entry.created.getTime());
    const previous = this.estimate;
    this.estimate = nextOffset(previous, sample, ACCEPTABLE_UNCERTAINTY_MS);
    if (previous && Math.abs(previous.offsetMs - this.estimate.offsetMs) > 1_000) {
      this.log.warn(
        { from: previous.offsetMs, to: this.estimate.offsetMs },
        'clock offset to the NATS server jumped',
      );
    }
  }
}
