// The move at scale, repeated on one cluster and measured beside what the apiserver does alone
// (issue 32; BENCHMARKS.md, "Scale"):
//
//   SCALE_TARGETS=1000 SCALE_RUNS=3 node bench/scale-rebalance.ts          (~30 min)
//   SCALE_TARGETS=5000 SCALE_RUNS=1 node bench/scale-rebalance.ts          (the full size; not in CI)
//
// (in the environment scripts/lib/bootstrap.sh sets up: the control plane and nats-server binaries)
//
// Switchyard installed from deploy/ on a local cluster of its own, every component a Pod and its
// own NATS user; a pool of four instances (two replicas each) serving SCALE_TARGETS two-version
// targets. Run this alone on the machine: its figures are the apiserver's and etcd's as much as
// Switchyard's. SCALE_RUNS runs with the users' own permissions, each followed by one with every
// permission (nats-server reloaded in place). Each run, in order:
//
// 1. A bare start: the newcomer created outside the pool on the idle cluster (nothing to move),
//    from its creation to its last replica ready; then deleted.
// 2. The rebalance: the newcomer joins the pool (weight 1). Created → replicas ready, ready → last
//    repoint, every apiserver write until then by writer and resource (the audit log), second by
//    second.
// 3. The apiserver alone: the handover scaled to zero, the same targets pointed back by bare
//    merge patches of spec.conversion, as many in flight as the handover has partitions.
// 4. Back to the start: the newcomer out of the pool, the handover scaled up again, every target
//    served by the pool as its status says, the newcomer deleted.
import { pino } from 'pino';
import { defaultConfig } from '../src/config/schema.ts';
import { patchInstance } from '../src/scenario/fleet.ts';
import { startInstalledCluster } from '../test/e2e/support/installed-cluster.ts';
import { describeCpu } from '../test/e2e/support/process-cpu.ts';
import {
  bareRepoints,
  bareStart,
  createScaleFleet,
  deleteInstance,
  describeRebalance,
  handoverReplicas,
  newcomerReadyAt,
  perSecond,
  rebalanceOnto,
  scaleHandover,
  scaleTargets,
  untilServedAsAssigned,
  writesByWriter,
} from '../test/e2e/support/scale-rebalance.ts';

const TARGETS = Number(process.env.SCALE_TARGETS ?? 1000);
const RUNS = Number(process.env.SCALE_RUNS ?? 3);
const POOL = ['s1', 's2', 's3', 's4'];
const NEWCOMER = 's5';
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'scale-bench' });
const targets = scaleTargets(TARGETS);
const say = (line: string) => process.stdout.write(`[scale-bench] ${line}\n`);
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface RunFigures {
  permissions: string;
  bareStartMs: number;
  startMs: number;
  movesMs: number;
  bareRepointsMs: number;
  moves: number;
  writes: number;
}

const { installed, nc } = await startInstalledCluster('scale-bench', { instances: [...POOL, NEWCOMER], log });
const figures: RunFigures[] = [];
try {
  const t = performance.now();
  await createScaleFleet(installed.admin, targets, POOL, (what) =>
    say(`${what} (${s(performance.now() - t)})`),
  );
  const handovers = await handoverReplicas(installed.admin);
  const inFlight = defaultConfig().bus.partitions.handover;
  // Each run twice, the components' NATS users with their own permissions and with every one
  // (reloaded in place, interleaved): what the per-subject checks cost, the same machine state.
  const plan = Array.from({ length: RUNS }, () => ['scoped', 'open'] as const).flat();
  for (const [i, permissions] of plan.entries()) {
    const run = `${i + 1} (${permissions})`;
    await installed.cluster.setNatsPermissions(permissions);
    const bareStartMs = await bareStart(installed, NEWCOMER);
    say(`run ${run}: ${NEWCOMER} started bare on the idle cluster, ready in ${s(bareStartMs)}`);
    const r = await rebalanceOnto(installed, targets, POOL, NEWCOMER);
    say(`run ${run}: ${describeRebalance(r, TARGETS, POOL.length)}`);
    say(
      `run ${run}: apiserver writes until the last repoint:\n${writesByWriter(r.writes, r.expected.length)}`,
    );
    say(`run ${run}: second by second:\n${perSecond(r)}`);
    say(`run ${run}: CPU by component during the rebalance:\n${describeCpu(r.cpu, r.cpuWindowMs)}`);
    await scaleHandover(installed.admin, 0);
    const bareRepointsMs = await bareRepoints(
      installed.admin,
      r.expected.map((crd) => ({ crd, to: r.before.get(crd) ?? '' })),
      inFlight,
    );
    const readyAt = newcomerReadyAt(r);
    const measured: RunFigures = {
      permissions,
      bareStartMs,
      startMs: readyAt - r.startedAt,
      movesMs: r.endedAt - readyAt,
      bareRepointsMs,
      moves: r.expected.length,
      writes: r.writes.length,
    };
    figures.push(measured);
    say(
      `run ${run}: the apiserver alone: ${r.expected.length} bare repoints, ${inFlight} in flight, in ${s(bareRepointsMs)}; ` +
        `moves ÷ bare repoints ${(measured.movesMs / bareRepointsMs).toFixed(2)}×, newcomer start ÷ bare start ` +
        `${(measured.startMs / bareStartMs).toFixed(2)}×, ${(measured.writes / measured.moves).toFixed(2)} writes per move`,
    );
    // Out of the pool first (an instance that targets resolve to cannot go), then deleted.
    await patchInstance(installed.admin, NEWCOMER, { sharding: { enabled: false } });
    await scaleHandover(installed.admin, handovers);
    await untilServedAsAssigned(installed.admin, targets, POOL, 600_000);
    await deleteInstance(installed.admin, NEWCOMER);
    say(`run ${run}: back to the pool`);
  }
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  say(
    [
      `${TARGETS} targets, ${RUNS} runs with each NATS permissions mode:`,
      row([
        'run',
        'NATS permissions',
        'moves',
        'bare start',
        'newcomer created → ready',
        '÷ bare start (≤ 1.5)',
        'ready → last repoint',
        'bare repoints',
        '÷ bare repoints (≤ 1.2)',
        'writes per move (≤ 2.5)',
      ]),
      row(Array.from({ length: 10 }, () => '---')),
      ...figures.map((f, i) =>
        row([
          String(i + 1),
          f.permissions,
          String(f.moves),
          s(f.bareStartMs),
          s(f.startMs),
          `${(f.startMs / f.bareStartMs).toFixed(2)}×`,
          s(f.movesMs),
          s(f.bareRepointsMs),
          `${(f.movesMs / f.bareRepointsMs).toFixed(2)}×`,
          (f.writes / f.moves).toFixed(2),
        ]),
      ),
    ].join('\n'),
  );
} finally {
  installed.witness.stop();
  await nc.close();
  await installed.cluster.stop({ keepDir: process.env.SWITCHYARD_KEEP_CLUSTER === '1' });
}
