// What deploy/autoscaling's KEDA triggers cost the NATS server (issue 33): each nats-jetstream
// trigger reads `/jsz?acc=$G&consumers=true&config=true`, every stream with every consumer, once
// per KEDA polling interval and, unless `useCachedMetrics`, once more per HorizontalPodAutoscaler
// sync. On a server holding the default topology and every handler's consumers:
//
//   SWITCHYARD_BIN_NATS=… node bench/keda-scaler-load.ts        (~10 s)
//
// measures one such read straight from the monitoring port and through the NATS Pod's gate (the
// path KEDA takes): the response's size, its wall time, and nats-server's CPU per read. Then it
// multiplies by deploy/autoscaling's triggers: reads per second with the HPA reading KEDA's cached
// values (as deployed) and, as the baseline, with every HPA read going to the server.
// BENCH_READS (300) reads per path.
import { join } from 'node:path';
import { pino } from 'pino';
import { parseAllDocuments } from 'yaml';
import { renderScaledObjects } from '../src/api/scaled-objects.ts';
import { ensureConsumer, planHandlerConsumers } from '../src/bus/runtime/consumers.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { CONCERNS } from '../src/handlers/concerns.ts';
import { ROUTER_CONSUMER } from '../src/handlers/router.ts';
import { startMonitorGate } from '../src/nats-pod/monitor-gate.ts';
import { cpuBetween, cpuSnapshot } from '../test/e2e/support/process-cpu.ts';
import { startOwnBus } from '../test/support/bus.ts';

const READS = Number(process.env.BENCH_READS ?? 300);
/** kube-controller-manager's --horizontal-pod-autoscaler-sync-period default. */
const HPA_SYNC_SECONDS = 15;

interface ScaledObject {
  spec: { pollingInterval: number; triggers: { useCachedMetrics?: boolean }[] };
}

interface Reads {
  bytes: number;
  medianMs: number;
  p99Ms: number;
  serverCpuMsPerRead: number;
}

async function measure(url: string, serverPid: number): Promise<Reads> {
  const server = { pids: () => [{ name: 'nats-server', pid: serverPid }] };
  for (let i = 0; i < 20; i++) await (await fetch(url)).arrayBuffer();
  const times: number[] = [];
  let bytes = 0;
  const before = cpuSnapshot(server);
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const res = await fetch(url);
    bytes = (await res.arrayBuffer()).byteLength;
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    times.push(performance.now() - started);
  }
  const cpu = cpuBetween(before, cpuSnapshot(server)).reduce((sum, [, s]) => sum + s, 0);
  times.sort((a, b) => a - b);
  return {
    bytes,
    medianMs: times[Math.floor(times.length / 2)] ?? Number.NaN,
    p99Ms: times[Math.floor(times.length * 0.99)] ?? Number.NaN,
    serverCpuMsPerRead: (cpu * 1000) / READS,
  };
}

function row(name: string, r: Reads): string {
  return `${name.padEnd(22)} ${(r.bytes / 1024).toFixed(0).padStart(6)} KiB  median ${r.medianMs.toFixed(2).padStart(6)} ms  p99 ${r.p99Ms.toFixed(2).padStart(6)} ms  nats-server ${r.serverCpuMsPerRead.toFixed(2)} CPU-ms/read`;
}

const bus = await startOwnBus();
const gate = await startMonitorGate(
  {
    port: 0,
    host: '127.0.0.1',
    upstream: bus.server.monitorUrl,
    passwordFile: join(bus.natsCredentialsDir, 'none'),
  },
  pino({ level: 'warn' }),
);
try {
  const partitions = defaultConfig().bus.partitions;
  const plans = [
    ...CONCERNS.flatMap((c) => planHandlerConsumers(c.consumers(partitions[c.partitionsOf]))),
    ...planHandlerConsumers(ROUTER_CONSUMER),
  ];
  for (const plan of plans) await ensureConsumer(bus.jsm, plan);
  const pid = bus.server.pid;
  if (pid === undefined) throw new Error('nats-server runs in a container: its CPU is not readable here');
  const query = '/jsz?acc=%24G&consumers=true&config=true';
  console.log(`${plans.length} consumers on the server; ${READS} reads per path, one at a time`);
  const direct = await measure(`${bus.server.monitorUrl}${query}`, pid);
  const gated = await measure(`http://127.0.0.1:${gate.port}${query}`, pid);
  console.log(row('monitoring port', direct));
  console.log(row("through the Pod's gate", gated));

  const objects = parseAllDocuments(renderScaledObjects()).map((d) => d.toJS() as ScaledObject);
  let polled = 0;
  let hpaReads = 0;
  for (const o of objects) {
    const uncached = o.spec.triggers.filter((t) => t.useCachedMetrics !== true).length;
    polled += o.spec.triggers.length / o.spec.pollingInterval;
    hpaReads += uncached / HPA_SYNC_SECONDS;
  }
  const triggers = objects.reduce((n, o) => n + o.spec.triggers.length, 0);
  const allUncached = polled + triggers / HPA_SYNC_SECONDS;
  const load = (name: string, perSecond: number) =>
    console.log(
      `${name.padEnd(40)} ${perSecond.toFixed(1).padStart(5)} reads/s  ${((perSecond * gated.bytes) / 2 ** 20).toFixed(2)} MiB/s  nats-server ${((perSecond * gated.serverCpuMsPerRead) / 10).toFixed(1)}% of a core`,
    );
  console.log(
    `deploy/autoscaling: ${objects.length} ScaledObjects, ${triggers} triggers; HPA sync ${HPA_SYNC_SECONDS} s`,
  );
  load('as deployed', polled + hpaReads);
  load('baseline: every HPA read to the server', allUncached);
} finally {
  await gate.close();
  await bus.stop();
}
