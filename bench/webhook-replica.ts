// One webhook-server replica's start, as its own process (bench/webhook.ts runs it): read the
// bus, decide what the instance holds, be ready, then compile it all in the background. Prints
// one JSON line: the time from the view's start to ready (view read + first sync), and on to
// every plan compiled and reported (`compiledMs`; `compileMs` is the background part), the heap
// held after gc against the same process before the start, and the peak RSS.
//
//   node --expose-gc bench/webhook-replica.ts <nats url> <instance> <expected targets> replica|view
//
// `view` reads the bus and stops there: the heap the records alone take. The view keeps configs
// and targets projected, as `switchyard webhook-server` does (views/projection.ts).
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { ObjectView } from '../src/bus/view.ts';
import type { ExpectedSet } from '../src/core/served-set-codec.ts';
import { REPLICA_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { WebhookMetrics } from '../src/webhook/metrics.ts';
import { Replica } from '../src/webhook/replica.ts';
import { REPLICA_VIEW_KINDS } from '../src/webhook/world.ts';
import { heapAfterGc } from './heap.ts';

const [url = '', instance = '', expected = '0', mode = 'replica'] = process.argv.slice(2);
const log = pino({ level: 'warn' });

const nc = await connect({ servers: url });
const js = jetstream(nc);
const metrics = new WebhookMetrics({ processMetrics: false });
let published: { served: number; expected: ExpectedSet } | undefined;
const sink = {
  publish(served: ReadonlySet<string>, set: ExpectedSet) {
    published = { served: served.size, expected: set };
  },
  settled: () => true,
  whenPublished: () => Promise.resolve(true),
};
const heapBefore = heapAfterGc();
const view = new ObjectView([...REPLICA_VIEW_KINDS], log, { project: REPLICA_VIEW_PROJECTIONS });
const replica = new Replica({ view, instance, sink, metrics, log, drainMs: 30_000 });

const started = performance.now();
await view.start(js);
const viewMs = performance.now() - started;
if (mode === 'replica') replica.start();
const readyMs = performance.now() - started;
await replica.whenCompiled();
const compiledMs = performance.now() - started;

const held = replica.describe().servable.length;
if (held !== Number(expected) || replica.ready !== (mode === 'replica'))
  throw new Error(`the replica holds ${held} plans, expected ${expected}`);
const heapAfter = heapAfterGc();
console.log(
  JSON.stringify({
    viewMs,
    syncMs: readyMs - viewMs,
    readyMs,
    compileMs: compiledMs - readyMs,
    compiledMs,
    held,
    published: published?.served,
    heapBytes: heapAfter - heapBefore,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
  }),
);
replica.stop();
view.stop();
await nc.close();
