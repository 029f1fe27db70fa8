/**
 * SIGTERM/SIGINT handling for a bus worker: stop every runtime (stop pulling,
 * finish or give back in-flight work), then drain the connection so pending
 * acks and publishes reach the server, then exit 0. A second signal exits at
 * once. Kubernetes' terminationGracePeriodSeconds must exceed the drain timeout.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

export interface Stoppable {
  stop(): Promise<void>;
}

export function stopOnSignals(opts: {
  nc: NatsConnection;
  stoppables: Stoppable[];
  log: Logger;
  signals?: NodeJS.Signals[];
  /** Default: `process.exit`. */
  exit?: (code: number) => void;
}): void {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      opts.log.warn({ signal }, 'second signal: exiting now');
      exit(1);
      return;
    }
    stopping = true;
    opts.log.info({ signal }, 'signal received: stopping');
    void (async () => {
      try {
        await Promise.all(opts.stoppables.map((s) => s.stop()));
        await opts.nc.drain();
        exit(0);
      } catch (err) {
        opts.log.error({ err }, 'clean stop failed');
        exit(1);
      }
    })();
  };
  for (const s of opts.signals ?? ['SIGTERM', 'SIGINT']) process.on(s, onSignal);
}
