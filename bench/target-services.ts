// What reading "the Services each target's conversions may go to" costs a view that changed
// (`readTargetServices`, src/views/view-reads.ts): every CRD's own Service, and for every XRD its
// own and those of the CRDs Crossplane generates from it. Side by side with the baseline it
// replaced, one Service per target name read off the target itself (an XRD's generated CRDs not
// consulted), on the same records. Each pass is a view whose target lists are new, as after a
// record: nothing is cached between passes.
//
//   node bench/target-services.ts                    # 50,000 CRDs and 1,000 XRDs
//   BENCH_CRDS=10000 BENCH_XRDS=5000 node bench/target-services.ts
import type { RecordedObject } from '../src/bus/messages.ts';
import { conversionServiceOf } from '../src/core/target-conversion.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { readTargetServices } from '../src/views/view-reads.ts';
import { targetNames } from './target-names.ts';

const CRDS = Number(process.env.BENCH_CRDS ?? 50_000);
const XRDS = Number(process.env.BENCH_XRDS ?? 1_000);
const PASSES = 30;

const conversion = (service: string) => ({
  strategy: 'Webhook',
  webhook: {
    clientConfig: {
      service: { name: service, namespace: 'switchyard-system', path: '/convert/x', port: 443 },
      caBundle: 'Q0E=',
    },
    conversionReviewVersions: ['v1'],
  },
});
const object = (name: string, spec: Record<string, unknown>): RecordedObject =>
  ({
    apiVersion: 'v1',
    kind: 'Thing',
    metadata: { name, uid: name, resourceVersion: '1' },
    spec,
  }) as RecordedObject;

const names = targetNames(CRDS + XRDS);
const xrdNames = names.slice(CRDS);
const service = (i: number) => `shard-${i % 20}-webhook-server`;
// Every XRD offers a claim: two generated CRDs each, recorded among the CRDs.
const crds = [
  ...names.slice(0, CRDS).map((n, i) => object(n, { group: 'g', conversion: conversion(service(i)) })),
  ...xrdNames.flatMap((n, i) => [
    object(n, { conversion: conversion(service(i)) }),
    object(`claim${n}`, { conversion: conversion(service(i + 1)) }),
  ]),
].map((o) => (HANDLER_VIEW_PROJECTIONS.crd as (o: RecordedObject) => RecordedObject)(o));
const xrds = xrdNames
  .map((n, i) => {
    const [plural, ...group] = n.split('.');
    return object(n, {
      group: group.join('.'),
      claimNames: { plural: `claim${plural}` },
      conversion: conversion(service(i + 1)),
    });
  })
  .map((o) => (HANDLER_VIEW_PROJECTIONS.xrd as (o: RecordedObject) => RecordedObject)(o));

function freshView() {
  const lists: Record<string, RecordedObject[]> = { crd: [...crds], xrd: [...xrds] };
  return { list: (kind: string) => lists[kind] ?? [] };
}

function baseline(view: ReturnType<typeof freshView>): Map<string, string | undefined> {
  const targets = new Map<string, string | undefined>();
  for (const t of [...view.list('crd'), ...view.list('xrd')])
    targets.set(t.metadata.name, conversionServiceOf(t));
  return targets;
}

function measure(what: string, run: (view: ReturnType<typeof freshView>) => Map<string, unknown>) {
  const times: number[] = [];
  let size = 0;
  for (let i = 0; i < PASSES; i++) {
    const view = freshView();
    const t = performance.now();
    size = run(view).size;
    times.push(performance.now() - t);
  }
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  const kept = run(freshView());
  global.gc?.();
  const heap = process.memoryUsage().heapUsed - before;
  times.sort((a, b) => a - b);
  const at = (q: number) => (times[Math.floor(q * (times.length - 1))] as number).toFixed(1);
  console.log(
    `${what.padEnd(44)} ${String(size).padStart(7)} targets  median ${at(0.5).padStart(6)} ms  p90 ${at(0.9).padStart(6)} ms` +
      (global.gc ? `  held ${(heap / 1024 / 1024).toFixed(1)} MiB` : ''),
  );
  return kept;
}

console.log(`${CRDS} CRDs, ${XRDS} XRDs each with a claim (${crds.length} CRD records), ${PASSES} passes`);
measure('baseline: one Service per name, off the target', baseline);
measure(
  'readTargetServices: the generated CRDs too',
  (view) => readTargetServices(view) as Map<string, unknown>,
);
