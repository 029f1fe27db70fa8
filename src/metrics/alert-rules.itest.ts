// Every alert of deploy/monitoring under promtool, the rules engine Prometheus itself runs: the
// rules load, each alert fires on the series that should raise it and not on the others
// (alert-rules.promtool.yaml), and each names a severity and a runbook that exists.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';

const run = promisify(execFile);

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
type Groups = { name: string; rules: Rule[] }[];

interface PromtoolTest {
  name: string;
  input_series: unknown[];
  alert_rule_test: { alertname: string; exp_alerts: unknown[] }[];
}

let dir = '';
let groups: Groups = [];
let cases: PromtoolTest[] = [];

function promtool(): string {
  const binary = process.env.SWITCHYARD_BIN_PROMTOOL;
  if (!binary) throw new Error('SWITCHYARD_BIN_PROMTOOL is not set: run the tests through scripts/test.sh');
  return binary;
}

/** promtool's exit code and output; a failure is an answer here, not a throw. */
async function runPromtool(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(promtool(), args, { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** The rules as Prometheus loads them, each alert's long description dropped (see the cases' header). */
function rulesFile(from: Groups): string {
  const stripped = from.map((g) => ({
    ...g,
    rules: g.rules.map(({ annotations, ...rule }) => {
      const { description: _, ...kept } = annotations ?? {};
      return { ...rule, annotations: kept };
    }),
  }));
  return stringify({ groups: stripped });
}

const alerts = () => groups.flatMap((g) => g.rules);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-promtool-'));
  const rule = parse(
    await readFile(join(PROJECT_ROOT, 'deploy/monitoring/prometheus-rule.yaml'), 'utf8'),
  ) as {
    spec: { groups: Groups };
  };
  groups = rule.spec.groups;
  const testFile = await readFile(join(PROJECT_ROOT, 'src/metrics/alert-rules.promtool.yaml'), 'utf8');
  cases = (parse(testFile) as { tests: PromtoolTest[] }).tests;
  await writeFile(join(dir, 'tests.yaml'), testFile);
  await writeFile(join(dir, 'full-rules.yaml'), stringify({ groups }));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the alert rules under promtool', () => {
  it('load as Prometheus loads them, every template included', async () => {
    const checked = await runPromtool('check', 'rules', 'full-rules.yaml');
    expect(checked.output).toContain(`SUCCESS: ${alerts().length} rules found`);
    expect(checked.code).toBe(0);
  });

  it('each fire on the series that should raise them, when they should, and on no other', async () => {
    await writeFile(join(dir, 'rules.yaml'), rulesFile(groups));
    const tested = await runPromtool('test', 'rules', 'tests.yaml');
    expect(tested.output).toContain('SUCCESS');
    expect(tested.code).toBe(0);
  });

  it('the cases can fail: an error threshold of 50% leaves 5% of failed conversions unalerted', async () => {
    const loosened = groups.map((g) => ({
      ...g,
      rules: g.rules.map((r) =>
        r.alert === 'SwitchyardConversionErrors' ? { ...r, expr: r.expr.replace('> 0.01', '> 0.5') } : r,
      ),
    }));
    expect(JSON.stringify(loosened)).not.toBe(JSON.stringify(groups));
    await writeFile(join(dir, 'rules.yaml'), rulesFile(loosened));
    const tested = await runPromtool('test', 'rules', 'tests.yaml');
    expect(tested.code).not.toBe(0);
    expect(tested.output).toContain('alertname: SwitchyardConversionErrors');
  });

  it('every alert has a case where it fires and one where a series beside it stays quiet', () => {
    for (const { alert } of alerts()) {
      const its = cases.filter((c) => c.alert_rule_test.some((t) => t.alertname === alert));
      const fires = its.some((c) =>
        c.alert_rule_test.some((t) => t.alertname === alert && t.exp_alerts.length > 0),
      );
      // promtool compares the whole set: a series that is input and not expected is shown quiet.
      const quiet = its.some(
        (c) =>
          c.alert_rule_test.some((t) => t.alertname === alert && t.exp_alerts.length === 0) ||
          c.input_series.length >
            Math.max(
              ...c.alert_rule_test.filter((t) => t.alertname === alert).map((t) => t.exp_alerts.length),
            ),
      );
      expect({ alert, fires, quiet }).toEqual({ alert, fires: true, quiet: true });
    }
  });

  it('every alert has a severity and a runbook section in docs/operations.md', async () => {
    const operations = await readFile(join(PROJECT_ROOT, 'docs/operations.md'), 'utf8');
    const anchors = new Set(
      [...operations.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        (m[1] as string)
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replaceAll(' ', '-'),
      ),
    );
    expect(alerts().length).toBeGreaterThanOrEqual(10);
    for (const rule of alerts()) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      const url = rule.annotations?.runbook_url ?? '';
      expect(url, rule.alert).toBe(`docs/operations.md#${rule.alert.toLowerCase()}`);
      expect(anchors.has(rule.alert.toLowerCase()), `a "### ${rule.alert}" section`).toBe(true);
    }
  });
});
