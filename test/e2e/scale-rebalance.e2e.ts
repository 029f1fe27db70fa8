import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/schema.ts';
import { configStatuses, handoverReady } from '../../src/scenario/fleet.ts';
import type { InstalledCluster } from './support/installed-cluster.ts';
import { useInstalledCluster } from './support/installed-cluster.ts';
import { describeCpu } from './support/process-cpu.ts';
import {
  bareRepoints,
  createScaleFleet,
  describeRebalance,
  newcomerReadyAt,
  perSecond,
  rebalanceOnto,
  scaleHandover,
  scaleTargets,
  writesByWriter,
} from './support/scale-rebalance.ts';

// Correctness at scale: every move the resolver predicts is made, verified, and nothing else
// moves. How long it takes and what it costs the apiserver is printed for the record; the
// benchmark (bench/scale-rebalance.ts) measures it, repeated and side by side with the apiserver
// alone.
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'scale-e2e' });
const TARGETS = Number(process.env.SCALE_TARGETS ?? 1000);
const POOL = ['s1', 's2', 's3', 's4'];
const NEWCOMER = 's5';
const targets = scaleTargets(TARGETS);

const e2e = useInstalledCluster('scale-e2e', { instances: [...POOL, NEWCOMER], log });
let installed: InstalledCluster;

beforeAll(async () => {
  installed = await e2e.start();
  const t = performance.now();
  await createScaleFleet(installed.admin, targets, POOL, (what) =>
    process.stderr.write(`[scale-e2e] ${what} (${((performance.now() - t) / 1000).toFixed(0)} s)\n`),
  );
}, 1_800_000);

describe(`${TARGETS} targets over four instances, a fifth joins`, () => {
  it('moves exactly the targets the newcomer wins, all onto it, each through a verified handover', async () => {
    const r = await rebalanceOnto(installed, targets, POOL, NEWCOMER);
    const statuses = await configStatuses(installed.admin);
    const moved = targets.filter((t) => r.after.get(t.crd) !== r.before.get(t.crd));
    expect(moved.map((t) => t.crd).sort()).toEqual([...r.expected].sort());
    expect(moved.every((t) => r.after.get(t.crd) === NEWCOMER)).toBe(true);
    expect(r.expected.length / TARGETS).toBeGreaterThan(0.12);
    expect(r.expected.length / TARGETS).toBeLessThan(0.28);
    for (const t of moved) {
      expect(handoverReady(statuses.get(t.config)), t.crd).toMatchObject({
        status: 'True',
        reason: 'HandoverReady',
      });
      const repoint = r.repoints.find((x) => x.target === t.crd);
      expect(
        repoint?.readyPods.filter((p) => !p.reported),
        t.crd,
      ).toEqual([]);
    }
    // The figures below time the moves from the newcomer's replicas' own log lines.
    expect(r.replicas.length, "the newcomer's replicas, found in their logs").toBeGreaterThan(0);
    expect(r.replicas.filter((x) => !(x.readyAtMs && x.readyAtMs >= x.startedAtMs))).toEqual([]);
    console.log(`[scale-e2e] ${describeRebalance(r, TARGETS, POOL.length)}`);
    console.log(
      `[scale-e2e] apiserver writes until the last repoint:\n${writesByWriter(r.writes, moved.length)}`,
    );
    console.log(`[scale-e2e] second by second:\n${perSecond(r)}`);
    console.log(`[scale-e2e] CPU by component during the rebalance:\n${describeCpu(r.cpu, r.cpuWindowMs)}`);

    // The apiserver's own floor for the same moves on the same cluster: the handover stopped,
    // the moved targets pointed back where they were by bare patches, as many in flight as the
    // handover has partitions.
    await scaleHandover(installed.admin, 0);
    const inFlight = defaultConfig().bus.partitions.handover;
    const bareMs = await bareRepoints(
      installed.admin,
      moved.map((t) => ({ crd: t.crd, to: r.before.get(t.crd) ?? '' })),
      inFlight,
    );
    const fromReadyMs = r.endedAt - newcomerReadyAt(r);
    console.log(
      `[scale-e2e] the apiserver alone, same cluster: the ${moved.length} targets pointed back by bare patches, ` +
        `${inFlight} in flight, in ${(bareMs / 1000).toFixed(1)} s (${((moved.length / bareMs) * 1000).toFixed(1)}/s). ` +
        `Switchyard's moves, from the newcomer ready to the last repoint: ${(fromReadyMs / 1000).toFixed(1)} s, ` +
        `${(fromReadyMs / bareMs).toFixed(2)}× the apiserver alone.`,
    );
  }, 900_000);
});
