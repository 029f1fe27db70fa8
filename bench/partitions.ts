// Partitions cap a partitioned handler's throughput, replicas raise it up to that cap.
//
//   SWITCHYARD_BIN_NATS=… node bench/partitions.ts
//
// For two partition counts and 1, 2, 4 replicas (separate processes, bench/partition-worker.ts),
// a backlog of MESSAGES keyed messages is drained and the rate printed. The handler takes CPU_MS
// of CPU and IO_MS of waiting, so on a 2-core machine one replica is CPU-bound
// (≈ 1000/CPU_MS msg/s at best) while the partition cap is partitions ÷ (CPU_MS + IO_MS + a few ms).
// Its own nats-server (file store in a temp dir), so nothing else shares it.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import {
  ensureConsumer,
  type HandlerConsumerSpec,
  partitionedSubject,
  planHandlerConsumers,
} from '../src/bus/runtime/index.ts';
import { NatsServer } from '../src/local-cluster/nats.ts';

const PARTITION_COUNTS = [4, 32];
const REPLICAS = [1, 2, 4];
const MESSAGES = 1_500;
const CPU_MS = 2;
const IO_MS = 20;

const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-partitions-'));
const server = await NatsServer.start(dir, pino({ level: 'warn' }));
const nc = await connect({ servers: server.url });
const jsm = await jetstreamManager(nc);
const js = jsm.jetstream();

async function run(partitions: number, replicas: number): Promise<number> {
  const id = `p${partitions}r${replicas}`;
  const stream = `BENCH_${id}`;
  const prefix = `bench.${id}`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`], retention: RetentionPolicy.Workqueue });
  const consumers: HandlerConsumerSpec = {
    mode: 'partitioned',
    stream,
    durable: 'bench',
    prefix,
    partitions,
    ackWaitMs: 30_000,
    maxDeliver: 5,
  };
  for (const c of planHandlerConsumers(consumers)) await ensureConsumer(jsm, c);
  await Promise.all(
    Array.from({ length: MESSAGES }, (_, i) =>
      js.publish(partitionedSubject(prefix, [`k${i}`], partitions), JSON.stringify({ i })),
    ),
  );
  const control = `benchctl.${id}`;
  const ready = nc.subscribe(`${control}.ready`, { max: replicas });
  const workers: ChildProcess[] = Array.from({ length: replicas }, () =>
    spawn(process.execPath, [join(import.meta.dirname, 'partition-worker.ts')], {
      env: {
        ...process.env,
        BENCH_WORKER: JSON.stringify({ natsUrl: server.url, control, consumers, cpuMs: CPU_MS, ioMs: IO_MS }),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  for await (const _ of ready) {
    // one per replica
  }
  const started = performance.now();
  nc.publish(`${control}.go`);
  while ((await jsm.streams.info(stream)).state.messages > 0) await new Promise((r) => setTimeout(r, 25));
  const rate = MESSAGES / ((performance.now() - started) / 1000);
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          w.once('exit', () => resolve());
          w.kill('SIGTERM');
        }),
    ),
  );
  await jsm.streams.delete(stream);
  return rate;
}

const results = new Map<number, number[]>();
for (const p of PARTITION_COUNTS) {
  results.set(p, []);
  for (const r of REPLICAS) results.get(p)?.push(await run(p, r));
}
process.stdout.write(
  `handler ${CPU_MS} ms CPU + ${IO_MS} ms I/O, ${MESSAGES} messages per run, msg/s\n` +
    `partitions | cap ≈ p/(cpu+io) | ${REPLICAS.map((r) => `${r} replica${r > 1 ? 's' : ''}`).join(' | ')}\n`,
);
for (const [p, rates] of results) {
  const cap = Math.round((p * 1000) / (CPU_MS + IO_MS));
  process.stdout.write(
    `${String(p).padStart(10)} | ${String(cap).padStart(15)} | ${rates.map((x) => x.toFixed(0).padStart(9)).join(' | ')}\n`,
  );
}
await nc.close();
await server.stop();
await rm(dir, { recursive: true, force: true });
