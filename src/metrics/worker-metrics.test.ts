import { describe, expect, it } from 'vitest';
import { type HandlerCounters, type HandlerRuntime, noHandlerCounters } from '../bus/runtime/index.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { GateMetrics } from '../nats-pod/gate-metrics.ts';
import { BucketCounts } from '../runtime/bucket-counts.ts';
import { WebhookMetrics } from '../webhook/metrics.ts';
import {
  type DefinedMetric,
  EXTERNAL_METRICS,
  metricOfSeries,
  metricReferences,
  monitoringQueries,
  undefinedReferences,
} from './monitoring-queries.ts';
import {
  countHandoverDecision,
  countKubeResponse,
  observeHandlerRuntime,
  observeViewLag,
  workerMetricsToServe,
} from './worker-metrics.ts';

const registry = workerMetricsToServe();

function counters(partial: Partial<HandlerCounters>): HandlerCounters {
  return { ...noHandlerCounters(), ...partial };
}

function fakeRuntime(
  concern: string,
  c: Partial<HandlerCounters>,
  stopped: Promise<void> = new Promise(() => undefined),
): HandlerRuntime {
  const attemptSeconds = new BucketCounts([0.1, 1]);
  attemptSeconds.observe(0.05);
  attemptSeconds.observe(0.5);
  return {
    concern,
    counters: () => counters(c),
    attemptSeconds,
    consumerStates: async () => [{ consumer: `${concern}-p0`, pending: 7, ackPending: 1, redelivered: 2 }],
    stop: async () => undefined,
    stopped,
  };
}

describe('deploy/monitoring', () => {
  const queries = monitoringQueries(PROJECT_ROOT);
  // The workers' metrics, the webhook-server replicas', the NATS monitoring gate's, and those of
  // Prometheus and the apiserver.
  const defined: DefinedMetric[] = [
    ...registry.getMetricsAsArray(),
    ...new WebhookMetrics().registry.getMetricsAsArray(),
    ...new GateMetrics().registry.getMetricsAsArray(),
  ]
    .map(
      (m): DefinedMetric => ({
        name: m.name,
        type: String(m.type),
        labelNames: (m as unknown as { labelNames?: string[] }).labelNames ?? [],
      }),
    )
    .concat(EXTERNAL_METRICS);

  it('has the thirteen alerts and a dashboard whose panels all query something', () => {
    expect(queries.filter((q) => q.where.startsWith('alert')).map((q) => q.where)).toEqual([
      'alert SwitchyardHandoverStalled',
      'alert SwitchyardDeadLetters',
      'alert SwitchyardConsumerBacklogGrowing',
      'alert SwitchyardServedLeaseUnreadable',
      'alert SwitchyardViewLagging',
      'alert SwitchyardConversionErrors',
      'alert SwitchyardConversionSlow',
      'alert SwitchyardWebhookServerDown',
      'alert SwitchyardWebhookLeaseNotRenewed',
      'alert SwitchyardPlansFailingToCompile',
      'alert SwitchyardCertificateExpiringSoon',
      'alert SwitchyardAdmissionWebhookFailing',
      'alert SwitchyardJetStreamStorageHigh',
    ]);
    expect(queries.filter((q) => q.where.startsWith('panel')).length).toBeGreaterThanOrEqual(15);
  });

  it('names only metrics the workers define, with labels they carry', () => {
    expect(undefinedReferences(queries, defined)).toEqual([]);
  });

  it('the check finds a renamed metric, a renamed label and a query of nothing', () => {
    expect(
      undefinedReferences(
        [
          { where: 'a', expr: 'rate(switchyard_handler_message_total[5m])' },
          { where: 'b', expr: 'sum(switchyard_handover_decisions_total{verdict="x"})' },
          { where: 'c', expr: 'vector(1)' },
        ],
        defined,
      ),
    ).toEqual([
      'a: switchyard_handler_message_total is not a defined metric',
      'b: switchyard_handover_decisions_total has no label verdict',
      'c: selects no metric',
    ]);
  });
});

describe('reading PromQL for the metrics it names', () => {
  it.each([
    [
      'sum by (concern, le) (rate(switchyard_handler_attempt_seconds_bucket[5m]))',
      [['switchyard_handler_attempt_seconds_bucket']],
    ],
    [
      'increase(switchyard_handover_decisions_total{reason="HandoverStalled"}[15m]) > 0',
      [['switchyard_handover_decisions_total', 'reason']],
    ],
    ['max by (pod) (a_b{job="x", state=~"t|u"}) and on (pod) c_d > 1', [['a_b', 'job', 'state'], ['c_d']]],
    ['histogram_quantile(0.9, sum by (le) (rate(x_y_bucket[30m])))', [['x_y_bucket']]],
  ])('%s', (expr, expected) => {
    expect(metricReferences(expr).map((r) => [r.series, ...r.labels])).toEqual(expected);
  });

  it('tells a histogram’s series from a metric that ends the same way', () => {
    const histograms = new Set(['a_seconds']);
    expect(metricOfSeries('a_seconds_bucket', histograms)).toBe('a_seconds');
    expect(metricOfSeries('b_count', histograms)).toBe('b_count');
  });

  it('a query naming an unknown metric fails the check', () => {
    const metric = metricOfSeries(
      metricReferences('rate(switchyard_no_such_total[5m])')[0]?.series ?? '',
      new Set(),
    );
    expect(registry.getSingleMetric(metric)).toBeUndefined();
  });
});

describe('the worker metrics', () => {
  it('render the runtimes’ counters by concern and outcome, their attempts, and their consumers', async () => {
    const stop = observeHandlerRuntime(
      fakeRuntime('metrics-test', {
        processed: 5,
        retried: 3,
        conflicts: 1,
        rechecks: 2,
        deadLettered: 4,
        inFlight: 1,
      }),
    );
    try {
      const text = await registry.metrics();
      expect(text).toContain('switchyard_handler_messages_total{concern="metrics-test",outcome="done"} 5');
      expect(text).toContain('switchyard_handler_messages_total{concern="metrics-test",outcome="retry"} 2');
      expect(text).toContain(
        'switchyard_handler_messages_total{concern="metrics-test",outcome="conflict"} 1',
      );
      expect(text).toContain('switchyard_handler_rechecks_scheduled_total{concern="metrics-test"} 2');
      expect(text).toContain('switchyard_handler_dead_letters_total{concern="metrics-test"} 4');
      expect(text).toContain('switchyard_handler_in_flight{concern="metrics-test"} 1');
      expect(text).toContain('switchyard_handler_attempt_seconds_bucket{le="0.1",concern="metrics-test"} 1');
      expect(text).toContain('switchyard_handler_attempt_seconds_count{concern="metrics-test"} 2');
      expect(text).toContain(
        'switchyard_consumer_pending_messages{concern="metrics-test",consumer="metrics-test-p0"} 7',
      );
    } finally {
      stop();
    }
    expect(await registry.metrics()).not.toContain(
      'switchyard_handler_messages_total{concern="metrics-test"',
    );
  });

  it('render a view’s lag, the apiserver’s answers and the handover’s decisions', async () => {
    const stop = observeViewLag({
      lag: () => new Map([['K8S_LATEST', 12]]),
      freshness: () => ({ state: 'behind', confirmedAgoMs: 7_500 }),
      stopped: new Promise(() => undefined),
    });
    countKubeResponse('writes', 'PATCH', 409);
    countKubeResponse('informers', 'GET', 'error');
    countHandoverDecision('wait', 'HandoverPending');
    try {
      const text = await registry.metrics();
      expect(text).toContain('switchyard_view_lag_messages{stream="K8S_LATEST"} 12');
      expect(text).toContain('switchyard_view_current 0');
      expect(text).toContain('switchyard_view_unconfirmed_seconds 7.5');
      expect(text).toContain('switchyard_kube_requests_total{client="writes",method="PATCH",code="409"} 1');
      expect(text).toContain(
        'switchyard_kube_requests_total{client="informers",method="GET",code="error"} 1',
      );
      expect(text).toContain('switchyard_handover_decisions_total{action="wait",reason="HandoverPending"} 1');
      expect(text).toContain('process_cpu_seconds_total');
    } finally {
      stop();
    }
  });

  it('count a runtime and a view only until they stop (the wiring hands them over and never takes them back)', async () => {
    let runtimeStopped: () => void = () => undefined;
    let viewStopped: () => void = () => undefined;
    observeHandlerRuntime(
      fakeRuntime(
        'metrics-stopping',
        { processed: 3 },
        new Promise((resolve) => {
          runtimeStopped = resolve;
        }),
      ),
    );
    observeViewLag({
      lag: () => new Map([['HEARTBEATS', 99]]),
      freshness: () => ({ state: 'unknown', confirmedAgoMs: undefined }),
      stopped: new Promise((resolve) => {
        viewStopped = resolve;
      }),
    });
    const before = await registry.metrics();
    expect(before).toContain(
      'switchyard_handler_messages_total{concern="metrics-stopping",outcome="done"} 3',
    );
    expect(before).toContain('switchyard_view_lag_messages{stream="HEARTBEATS"} 99');
    runtimeStopped();
    viewStopped();
    await Promise.resolve();
    const after = await registry.metrics();
    expect(after).not.toContain('switchyard_handler_messages_total{concern="metrics-stopping"');
    expect(after).not.toContain('switchyard_view_lag_messages{stream="HEARTBEATS"}');
  });
});
