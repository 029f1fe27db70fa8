// One handler replica for bench/partitions.ts, as its own process: a partitioned handler whose
// work is a CPU part (busy-wait) and an I/O part (a timer), so one replica saturates a core while
// most of each message's latency is waiting. Configured by BENCH_WORKER (JSON); starts pulling when
// the bench publishes on `<control>.go`, so every replica starts at once.
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { done, type HandlerConsumerSpec, startHandlerRuntime } from '../src/bus/runtime/index.ts';

const config = z
  .object({
    natsUrl: z.string(),
    control: z.string(),
    consumers: z.custom<HandlerConsumerSpec>(),
    cpuMs: z.number(),
    ioMs: z.number(),
  })
  .parse(JSON.parse(process.env.BENCH_WORKER ?? '{}'));

const nc = await connect({ servers: config.natsUrl });
const log = pino({ level: 'warn' });
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // CPU part of the handler
  }
}
const go = nc.subscribe(`${config.control}.go`, { max: 1 });
nc.publish(`${config.control}.ready`);
for await (const _ of go) break;
const runtime = await startHandlerRuntime({
  nc,
  log,
  concern: 'bench',
  consumers: config.consumers,
  ensureConsumersAtStart: false,
  schema: z.object({ i: z.number() }),
  deadLetterSubject: `${config.control}.dlq`,
  pullExpiresMs: 1_000,
  handle: async () => {
    busyWait(config.cpuMs);
    await new Promise((r) => setTimeout(r, config.ioMs));
    return done;
  },
});
process.once('SIGTERM', () => {
  void runtime.stop({ drainTimeoutMs: 1_000 }).then(() => nc.close().then(() => process.exit(0)));
});
