// The queries of deploy/monitoring (the alerts' expressions and the dashboard's targets) and the
// metrics they name, so tests can hold them to what the workers define and emit: a renamed
// metric or label must fail CI, not leave an alert that can never fire or a blank panel.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface MonitoringQuery {
  /** Where it is, e.g. `alert SwitchyardDeadLetters` or `panel "View lag"`. */
  where: string;
  expr: string;
}

export interface MetricReference {
  /** As written, e.g. `switchyard_handover_wait_seconds_bucket`. */
  series: string;
  /** Label names its matchers use, e.g. `reason` in `{reason="HandoverStalled"}`. */
  labels: string[];
}

/** Every alert expression and dashboard target of `deploy/monitoring` under `root`. */
export function monitoringQueries(root: string): MonitoringQuery[] {
  const rule = parse(readFileSync(join(root, 'deploy/monitoring/prometheus-rule.yaml'), 'utf8')) as {
    spec: { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  };
  const alerts = rule.spec.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })),
  );
  const dashboard = JSON.parse(readFileSync(join(root, 'deploy/monitoring/dashboard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  const panels = dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })),
  );
  return [...alerts, ...panels];
}

/** PromQL's functions and keywords that a selector-like word could be mistaken for. */
const NOT_METRICS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'by',
  'without',
  'and',
  'or',
  'unless',
  'rate',
  'increase',
  'deriv',
  'histogram_quantile',
  'topk',
  'bottomk',
  'abs',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'irate',
  'delta',
  'idelta',
  'clamp_min',
  'clamp_max',
  'vector',
]);

/**
 * The series a query selects and the labels each matches on. A word followed by `(` is a
 * function; words inside `by (…)`, `without (…)`, `on (…)` and `{…}` are labels; strings and
 * durations are skipped.
 */
export function metricReferences(expr: string): MetricReference[] {
  const out: MetricReference[] = [];
  const text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\[[^\]]*\]/g, '');
  const grouping = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g;
  const cleaned = text.replace(grouping, ' ');
  const selector = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?/g;
  for (const m of cleaned.matchAll(selector)) {
    const [, name, matchers, call] = m;
    if (!name || call || NOT_METRICS.has(name) || /^\d/.test(name)) continue;
    if (matchers === undefined && !name.includes('_')) continue;
    const labels = [...(matchers ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(
      (l) => l[1] as string,
    );
    out.push({ series: name, labels });
  }
  return out;
}

/** The metric a series belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own. */
export function metricOfSeries(series: string, histograms: ReadonlySet<string>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = series.slice(0, -suffix.length);
    if (series.endsWith(suffix) && histograms.has(base)) return base;
  }
  return series;
}

/**
 * Labels Prometheus adds to every scraped series (the target's, and the PodMonitor's
 * `webhook_server` from the replica's instance label): any query may match on them.
 */
const TARGET_LABELS = new Set([
  'namespace',
  'pod',
  'job',
  'instance',
  'service',
  'container',
  'endpoint',
  'webhook_server',
]);

/**
 * Metrics the alerts read that Switchyard does not emit: Prometheus's own `up`, one per target,
 * and the apiserver's, which a cluster's Prometheus scrapes (job `apiserver`).
 */
export const EXTERNAL_METRICS: readonly DefinedMetric[] = [
  { name: 'up', type: 'gauge', labelNames: [] },
  {
    name: 'apiserver_admission_webhook_rejection_count',
    type: 'counter',
    labelNames: ['name', 'type', 'operation', 'error_type', 'rejection_code'],
  },
];

export interface DefinedMetric {
  name: string;
  type: string;
  labelNames: readonly string[];
}

/** What in `queries` names a metric that is not defined, or a label the metric does not carry. */
export function undefinedReferences(
  queries: readonly MonitoringQuery[],
  defined: readonly DefinedMetric[],
): string[] {
  const byName = new Map(defined.map((m) => [m.name, m]));
  const histograms = new Set(defined.filter((m) => m.type === 'histogram').map((m) => m.name));
  const problems: string[] = [];
  for (const { where, expr } of queries) {
    const refs = metricReferences(expr);
    if (refs.length === 0) problems.push(`${where}: selects no metric`);
    for (const { series, labels } of refs) {
      const metric = byName.get(metricOfSeries(series, histograms));
      if (metric === undefined) {
        problems.push(`${where}: ${series} is not a defined metric`);
        continue;
      }
      for (const label of labels)
        if (!metric.labelNames.includes(label) && !TARGET_LABELS.has(label))
          problems.push(`${where}: ${metric.name} has no label ${label}`);
    }
  }
  return problems;
}
