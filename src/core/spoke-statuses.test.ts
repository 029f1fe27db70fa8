import { describe, expect, it } from 'vitest';
import { VERDICT_LIMITS } from '../api/conversion-config.ts';
import type { Diagnostic } from '../engine/diagnostics.ts';
import { int, root, spec } from '../engine/test-support.ts';
import type { ConfigVerdict, RuleVerdict, SpokeVerdict } from '../engine/verdicts.ts';
import { decideConfigStatus } from './config-status.ts';
import { validateConfig } from './config-validation.ts';
import { shareOut, verdictStatus } from './spoke-statuses.ts';

const BOTH = { hubToSpoke: true, spokeToHub: true };
const diagnostic = (
  code: Diagnostic['code'],
  message: string,
  extra: Partial<Diagnostic> = {},
): Diagnostic => ({
  severity: 'error',
  code,
  message,
  hint: 'Fix it.',
  ...extra,
});

function rule(index: number, extra: Partial<RuleVerdict> = {}): RuleVerdict {
  return {
    index,
    strategy: 'FieldRename',
    hubPaths: [`spec.hub${index}`],
    spokePaths: [`spec.spoke${index}`],
    lossless: BOTH,
    resolved: true,
    errors: [],
    warnings: [],
    ...extra,
  };
}

function spoke(version: string, rules: RuleVerdict[], extra: Partial<SpokeVerdict> = {}): SpokeVerdict {
  return {
    version,
    lossless: BOTH,
    ruleResults: rules,
    fieldsUncoveredHub: [],
    fieldsUncoveredSpoke: [],
    errors: [],
    warnings: [],
    ...extra,
  };
}

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('verdictStatus', () => {
  it('lists everything of a config that fits, in the reference’s field names, without `omitted`', () => {
    const verdict: ConfigVerdict = {
      overallLossless: false,
      spokes: [
        spoke('v1', [rule(0), rule(1, { lossless: { hubToSpoke: false, spokeToHub: true }, hubPaths: [] })], {
          lossless: { hubToSpoke: false, spokeToHub: true },
          fieldsUncoveredHub: ['spec.old'],
          warnings: [
            diagnostic('UnclaimedField', 'spec.old is dropped.', { severity: 'warning', path: 'spec.old' }),
          ],
        }),
      ],
    };
    expect(verdictStatus(verdict)).toEqual({
      overallLossless: false,
      spokeStatuses: [
        {
          version: 'v1',
          lossless: { hubToSpoke: false, spokeToHub: true },
          ruleResults: [
            {
              index: 0,
              strategy: 'FieldRename',
              hubPaths: ['spec.hub0'],
              spokePaths: ['spec.spoke0'],
              lossless: BOTH,
            },
            {
              index: 1,
              strategy: 'FieldRename',
              spokePaths: ['spec.spoke1'],
              lossless: { hubToSpoke: false, spokeToHub: true },
            },
          ],
          fieldsUncoveredHub: ['spec.old'],
          warnings: ['UnclaimedField spec.old: spec.old is dropped. Fix: Fix it.'],
        },
      ],
    });
  });

  it('bounds 32 spokes × 256 rules to the byte budget, keeping what says something, and counts what it leaves out', () => {
    const spokes = Array.from({ length: 32 }, (_, s) =>
      spoke(
        `v${s + 1}`,
        Array.from({ length: 256 }, (_, i) =>
          rule(i, {
            hubPaths: [`spec.a.rather.long.path.to.a.field.of.the.hub.number${i}`],
            ...(i === 200 && {
              errors: [diagnostic('UnknownPath', 'no such field', { ruleIndex: i })],
              lossless: { hubToSpoke: false, spokeToHub: false },
            }),
          }),
        ),
      ),
    );
    const status = verdictStatus({ overallLossless: false, spokes });
    expect(bytes(status.spokeStatuses)).toBeLessThanOrEqual(VERDICT_LIMITS.bytes);
    for (const s of status.spokeStatuses) {
      const listed = s.ruleResults ?? [];
      expect(listed.length + (s.omitted?.ruleResults ?? 0)).toBe(256);
      expect(
        listed.some((r) => r.index === 200),
        'the rule with an error goes first',
      ).toBe(true);
      expect(
        listed.map((r) => r.index),
        'in the config’s order',
      ).toEqual([...listed.map((r) => r.index)].sort((a, b) => a - b));
      expect(listed.length).toBeGreaterThan(5);
    }
  });

  it('stays within the budget in the worst case the API allows: the longest paths, the most of them, long messages everywhere', () => {
    const long = (n: number) => `spec.${'x'.repeat(1_020)}${n}`;
    const paths = Array.from({ length: 64 }, (_, p) => long(p));
    const fields = Array.from({ length: 2_000 }, (_, p) => long(p));
    const message = 'm'.repeat(4_000);
    const errors = Array.from({ length: 2_000 }, () => diagnostic('UnclaimedField', message));
    const warnings = errors.map((d) => ({ ...d, severity: 'warning' as const }));
    const spokes = Array.from({ length: 32 }, (_, s) =>
      spoke(
        `v${s + 1}`,
        Array.from({ length: 256 }, (_, i) =>
          rule(i, {
            hubPaths: paths,
            spokePaths: paths,
            errors: errors.slice(0, 10),
            warnings: warnings.slice(0, 10),
          }),
        ),
        {
          fieldsUncoveredHub: fields,
          fieldsUncoveredSpoke: fields,
          errors,
          warnings,
        },
      ),
    );
    const status = verdictStatus({ overallLossless: false, spokes });
    expect(bytes(status.spokeStatuses)).toBeLessThanOrEqual(VERDICT_LIMITS.bytes);
    const [first] = status.spokeStatuses;
    expect(first?.errors?.[0]).toHaveLength(VERDICT_LIMITS.messageChars);
    expect(first?.errors?.[0]?.endsWith('…')).toBe(true);
    expect(first?.omitted).toMatchObject({ errors: expect.any(Number), ruleResults: 256, warnings: 2_000 });
  });

  it('cuts a rule result to a few paths and messages, and counts the cut', () => {
    const many = rule(0, {
      hubPaths: Array.from({ length: 20 }, (_, i) => `spec.h${i}`),
      errors: Array.from({ length: 6 }, () => diagnostic('InvalidRule', 'bad')),
    });
    const [s] = verdictStatus({ overallLossless: false, spokes: [spoke('v1', [many])] }).spokeStatuses;
    expect(s?.ruleResults?.[0]?.hubPaths).toHaveLength(VERDICT_LIMITS.rulePaths);
    expect(s?.ruleResults?.[0]?.errors).toHaveLength(VERDICT_LIMITS.ruleMessages);
    expect(s?.omitted).toEqual({
      ruleEntries: 20 - VERDICT_LIMITS.rulePaths + 6 - VERDICT_LIMITS.ruleMessages,
    });
  });
});

describe('shareOut', () => {
  it('gives the small what they want and splits the rest evenly among the large, within the budget', () => {
    expect(shareOut([10, 1_000, 20, 1_000], 1_030)).toEqual([10, 500, 20, 500]);
    expect(shareOut([10, 20], 1_000)).toEqual([10, 20]);
    const shares = shareOut([5, 700, 300, 9_000], 1_000);
    expect(shares.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1_000);
  });
});

describe('a status write of a config with 32 spokes × 256 rules', () => {
  it('compiles, derives and writes verdicts of a sane size', () => {
    const fields = (prefix: string) =>
      Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`${prefix}${i}`, int()]));
    const spokeVersions = Array.from({ length: 32 }, (_, i) => `v${i + 1}`);
    const live = {
      spec: {
        versions: [
          { name: 'v100', served: true, storage: true, schema: { openAPIV3Schema: root(fields('hub')) } },
          ...spokeVersions.map((name) => ({
            name,
            served: true,
            storage: false,
            schema: { openAPIV3Schema: root(fields(`${name}f`)) },
          })),
        ],
      },
    };
    const config = spec(
      'v100',
      Object.fromEntries(
        spokeVersions.map((v) => [
          v,
          Array.from({ length: 256 }, (_, i) => ({
            strategy: 'FieldRename',
            fieldRename: { hubPath: `spec.hub${i}`, spokePath: `spec.${v}f${i}` },
          })),
        ]),
      ),
    );
    const validation = validateConfig(
      config,
      { kind: 'CustomResourceDefinition', name: 't', live },
      { verdicts: true },
    );
    expect(validation.verdict).toBe('Compiled');
    const write = decideConfigStatus({
      current: undefined,
      generation: 1,
      validation,
      driftPolicy: 'KeepServingStale',
      servingInstance: undefined,
      nowIso: '2026-11-30T10:00:00Z',
    });
    expect(write?.overallLossless).toBe(true);
    expect(write?.spokeStatuses).toHaveLength(32);
    expect(bytes(write)).toBeLessThanOrEqual(VERDICT_LIMITS.bytes + 4 * 1024);
    expect(write?.spokeStatuses?.[0]?.omitted?.ruleResults).toBeGreaterThan(0);
  });
});
