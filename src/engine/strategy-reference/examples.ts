// One worked example per strategy: the hub and spoke fields it concerns, the rule, and an object
// on each side. docs/strategies.md is rendered from these through the engine itself (render.ts),
// and the differential suite runs them through the reference operator's engine too, so the
// before-and-after objects in the docs are what both engines do, not what someone wrote down.
import type { Strategy } from '../../api/rules.ts';
import type { TargetSchema } from '../schema.ts';

export interface StrategyExample {
  strategy: Strategy;
  /** What the strategy does, in a sentence or two (Markdown). */
  summary: string;
  /** The `spec` fields of the hub (v2) and the spoke (v1) versions. */
  hub: Record<string, TargetSchema>;
  spoke: Record<string, TargetSchema>;
  /** The spoke's rules, as a config writes them. */
  rules: Record<string, unknown>[];
  /** A hub object's spec (and metadata, for the strategies that use it) converted to the spoke, and a spoke one converted to the hub. */
  hubObject: ExampleObject;
  spokeObject: ExampleObject;
}

export interface ExampleObject {
  spec: Record<string, unknown>;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}

const string = (extra: Partial<TargetSchema> = {}): TargetSchema => ({ type: 'string', ...extra });
const integer: TargetSchema = { type: 'integer' };
const object = (properties: Record<string, TargetSchema>): TargetSchema => ({ type: 'object', properties });

export const STRATEGY_EXAMPLES: readonly StrategyExample[] = [
  {
    strategy: 'FieldRename',
    summary: 'The field moved: the same value, the same shape, at another path.',
    hub: { storageGB: integer },
    spoke: { storageSize: integer },
    rules: [
      { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.storageGB', spokePath: 'spec.storageSize' } },
    ],
    hubObject: { spec: { storageGB: 500 } },
    spokeObject: { spec: { storageSize: 64 } },
  },
  {
    strategy: 'ScalarToObject',
    summary:
      'A scalar on the hub is the value under `key` of an object on the spoke. Building the object writes `defaultsForOtherKeys` beside the key; the way back keeps only the key, so it is lossy when the object declares other keys.',
    hub: { replicas: integer },
    spoke: { replicas: object({ count: integer, autoscale: string() }) },
    rules: [
      {
        strategy: 'ScalarToObject',
        scalarToObject: {
          hubPath: 'spec.replicas',
          spokePath: 'spec.replicas',
          key: 'count',
          defaultsForOtherKeys: { autoscale: 'off' },
        },
        acknowledgeLossy: true,
        reason: 'autoscale is new in v1 and has no hub field',
      },
    ],
    hubObject: { spec: { replicas: 3 } },
    spokeObject: { spec: { replicas: { count: 5, autoscale: 'on' } } },
  },
  {
    strategy: 'ObjectToScalar',
    summary: 'The mirror of ScalarToObject: an object on the hub, the scalar under its `key` on the spoke.',
    hub: { network: object({ cidr: string() }) },
    spoke: { networkCIDR: string() },
    rules: [
      {
        strategy: 'ObjectToScalar',
        objectToScalar: { hubPath: 'spec.network', spokePath: 'spec.networkCIDR', key: 'cidr' },
      },
    ],
    hubObject: { spec: { network: { cidr: '10.0.0.0/16' } } },
    spokeObject: { spec: { networkCIDR: '192.168.0.0/24' } },
  },
  {
    strategy: 'EnumRemap',
    summary:
      'The values of a scalar field are spelled differently on each side. Values are strings, integers, numbers or booleans, matched by type and value.',
    hub: { tier: string({ enum: ['Standard', 'Premium'] }) },
    spoke: { tier: string({ enum: ['basic', 'gold'] }) },
    rules: [
      {
        strategy: 'EnumRemap',
        enumRemap: {
          path: 'spec.tier',
          mapping: [
            { hub: 'Standard', spoke: 'basic' },
            { hub: 'Premium', spoke: 'gold' },
          ],
        },
      },
    ],
    hubObject: { spec: { tier: 'Premium' } },
    spokeObject: { spec: { tier: 'basic' } },
  },
  {
    strategy: 'DefaultValue',
    summary:
      'A field only one side declares: converting into that side writes the default; converting away drops the value (lossy).',
    hub: { region: string(), zone: string() },
    spoke: { region: string() },
    rules: [
      {
        strategy: 'DefaultValue',
        defaultValue: { path: 'spec.zone', existsOn: 'Hub', default: 'a' },
        acknowledgeLossy: true,
        reason: 'v1 has no zones',
      },
    ],
    hubObject: { spec: { region: 'eu-west', zone: 'c' } },
    spokeObject: { spec: { region: 'us-east' } },
  },
  {
    strategy: 'Constant',
    summary:
      'A field only one side declares, always written with the same value when converting into that side.',
    hub: { region: string(), managedBy: string() },
    spoke: { region: string() },
    rules: [
      {
        strategy: 'Constant',
        constant: { path: 'spec.managedBy', existsOn: 'Hub', value: 'platform' },
        acknowledgeLossy: true,
      },
    ],
    hubObject: { spec: { region: 'eu-west', managedBy: 'platform' } },
    spokeObject: { spec: { region: 'us-east' } },
  },
  {
    strategy: 'Delete',
    summary:
      'A field only one side declares is dropped converting away from it, and left absent converting into it.',
    hub: { region: string() },
    spoke: { region: string(), legacyFlag: string() },
    rules: [
      {
        strategy: 'Delete',
        delete: { path: 'spec.legacyFlag', existsOn: 'Spoke' },
        acknowledgeLossy: true,
        reason: 'legacyFlag was never read',
      },
    ],
    hubObject: { spec: { region: 'eu-west' } },
    spokeObject: { spec: { region: 'us-east', legacyFlag: 'yes' } },
  },
];
