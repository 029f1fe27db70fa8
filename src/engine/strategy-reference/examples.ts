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
const arrayOf = (items: TargetSchema, extra: Partial<TargetSchema> = {}): TargetSchema => ({
  type: 'array',
  items,
  ...extra,
});
const mapOf = (values: TargetSchema): TargetSchema => ({ type: 'object', additionalProperties: values });

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
  {
    strategy: 'SingletonArrayToObject',
    summary:
      'An array on the hub is, on the spoke, an object: its first element. Lossless both ways when the array declares `maxItems: 1`; otherwise elements after the first are lost converting to the spoke.',
    hub: { zones: arrayOf(object({ name: string() }), { maxItems: 1 }) },
    spoke: { zone: object({ name: string() }) },
    rules: [
      {
        strategy: 'SingletonArrayToObject',
        singletonArrayToObject: { hubPath: 'spec.zones', spokePath: 'spec.zone' },
      },
    ],
    hubObject: { spec: { zones: [{ name: 'eu-west-1a' }] } },
    spokeObject: { spec: { zone: { name: 'us-east-1b' } } },
  },
  {
    strategy: 'ObjectToSingletonArray',
    summary: 'The mirror of SingletonArrayToObject: an object on the hub, a one-element array on the spoke.',
    hub: { owner: object({ team: string() }) },
    spoke: { owners: arrayOf(object({ team: string() }), { maxItems: 1 }) },
    rules: [
      {
        strategy: 'ObjectToSingletonArray',
        objectToSingletonArray: { hubPath: 'spec.owner', spokePath: 'spec.owners' },
      },
    ],
    hubObject: { spec: { owner: { team: 'payments' } } },
    spokeObject: { spec: { owners: [{ team: 'search' }] } },
  },
  {
    strategy: 'FieldsToMap',
    summary:
      "Several hub fields become one spoke map, keyed by `keyNames` (or each path's last segment). A spoke key no hub field takes fails the conversion (`onUnknownSpokeKey: Error`, the default) or is dropped (`Drop`, lossy).",
    hub: { cpuLimit: string(), memoryLimit: string() },
    spoke: { limits: mapOf(string()) },
    rules: [
      {
        strategy: 'FieldsToMap',
        fieldsToMap: {
          hubPaths: ['spec.cpuLimit', 'spec.memoryLimit'],
          spokeMapPath: 'spec.limits',
          keyNames: { 'spec.cpuLimit': 'cpu', 'spec.memoryLimit': 'memory' },
        },
      },
    ],
    hubObject: { spec: { cpuLimit: '500m', memoryLimit: '1Gi' } },
    spokeObject: { spec: { limits: { cpu: '2', memory: '4Gi' } } },
  },
  {
    strategy: 'MapToFields',
    summary: 'The mirror of FieldsToMap: one hub map becomes several spoke fields.',
    hub: { tags: mapOf(string()) },
    spoke: { team: string(), costCenter: string() },
    rules: [
      {
        strategy: 'MapToFields',
        mapToFields: {
          hubMapPath: 'spec.tags',
          spokePaths: ['spec.team', 'spec.costCenter'],
          keyNames: { 'spec.costCenter': 'cost-center' },
        },
      },
    ],
    hubObject: { spec: { tags: { team: 'payments', 'cost-center': 'cc-42' } } },
    spokeObject: { spec: { team: 'search', costCenter: 'cc-7' } },
  },
  {
    strategy: 'ArrayToMapByKey',
    summary:
      "An array of objects on the hub is, on the spoke, a map keyed by each element's `keyField` (taken out of the value). A duplicate, missing or non-string key fails the conversion. The array comes back sorted by key, so the rule is lossy hub → spoke (its order).",
    hub: { endpoints: arrayOf(object({ name: string(), url: string() })) },
    spoke: { endpoints: mapOf(object({ url: string() })) },
    rules: [
      {
        strategy: 'ArrayToMapByKey',
        arrayToMapByKey: { hubPath: 'spec.endpoints', spokePath: 'spec.endpoints', keyField: 'name' },
        acknowledgeLossy: true,
        reason: 'endpoint order carries no meaning',
      },
    ],
    hubObject: {
      spec: {
        endpoints: [
          { name: 'web', url: 'https://web' },
          { name: 'api', url: 'https://api' },
        ],
      },
    },
    spokeObject: { spec: { endpoints: { web: { url: 'https://web' }, api: { url: 'https://api' } } } },
  },
  {
    strategy: 'MapToArrayByKey',
    summary:
      'The mirror of ArrayToMapByKey: a map on the hub, an array of objects on the spoke, each key stored in `keyField`.',
    hub: { limitsByTier: mapOf(object({ limit: integer })) },
    spoke: { tierLimits: arrayOf(object({ tier: string(), limit: integer })) },
    rules: [
      {
        strategy: 'MapToArrayByKey',
        mapToArrayByKey: { hubPath: 'spec.limitsByTier', spokePath: 'spec.tierLimits', keyField: 'tier' },
        acknowledgeLossy: true,
        reason: 'tier order carries no meaning',
      },
    ],
    hubObject: { spec: { limitsByTier: { gold: { limit: 100 }, basic: { limit: 10 } } } },
    spokeObject: {
      spec: {
        tierLimits: [
          { tier: 'gold', limit: 100 },
          { tier: 'basic', limit: 10 },
        ],
      },
    },
  },
  {
    strategy: 'MapKeyRename',
    summary:
      'Known keys of a free-form map are renamed (hub key → spoke key, one to one); other keys keep their names.',
    hub: { extraLabels: mapOf(string()) },
    spoke: { extraLabels: mapOf(string()) },
    rules: [
      {
        strategy: 'MapKeyRename',
        mapKeyRename: {
          hubPath: 'spec.extraLabels',
          spokePath: 'spec.extraLabels',
          renames: { app: 'application' },
        },
      },
    ],
    hubObject: { spec: { extraLabels: { app: 'shop', tier: 'web' } } },
    spokeObject: { spec: { extraLabels: { application: 'search', tier: 'api' } } },
  },
  {
    strategy: 'ForEach',
    summary:
      'Nested rules, with paths relative to one element, applied to each element of a hub array and the spoke array at the same index. If both arrays are on the input, their lengths must match. A ForEach may hold one more level of ForEach (arrays of arrays).',
    hub: { volumes: arrayOf(object({ sizeGB: integer, label: string() })) },
    spoke: { volumes: arrayOf(object({ size: integer, name: string() })) },
    rules: [
      {
        strategy: 'ForEach',
        forEach: {
          hubItemsPath: 'spec.volumes',
          spokeItemsPath: 'spec.volumes',
          rules: [
            { strategy: 'FieldRename', fieldRename: { hubPath: 'sizeGB', spokePath: 'size' } },
            { strategy: 'FieldRename', fieldRename: { hubPath: 'label', spokePath: 'name' } },
          ],
        },
      },
    ],
    hubObject: {
      spec: {
        volumes: [
          { sizeGB: 10, label: 'data' },
          { sizeGB: 1, label: 'logs' },
        ],
      },
    },
    spokeObject: { spec: { volumes: [{ size: 20, name: 'cache' }] } },
  },
  {
    strategy: 'CEL',
    summary:
      'Two CEL expressions, one per direction, over `object` (the input; every number a double), each returning a map from destination path to value; only the declared destinations are written. Always lossy (the engine cannot prove the two inverse). Evaluated under a cost limit (1e6, as the reference) and a 250 ms deadline.',
    hub: { packed: integer },
    spoke: { bitHigh: integer, bitLow: integer },
    rules: [
      {
        strategy: 'CEL',
        cel: {
          hubPaths: ['spec.packed'],
          spokePaths: ['spec.bitHigh', 'spec.bitLow'],
          hubToSpoke:
            '{"spec.bitHigh": int(object.spec.packed) / 256, "spec.bitLow": int(object.spec.packed) % 256}',
          spokeToHub: '{"spec.packed": int(object.spec.bitHigh) * 256 + int(object.spec.bitLow)}',
        },
        acknowledgeLossy: true,
        reason: 'integer packing the engine cannot prove lossless',
      },
    ],
    hubObject: { spec: { packed: 1025 } },
    spokeObject: { spec: { bitHigh: 4, bitLow: 1 } },
  },
  {
    strategy: 'ListJoin',
    summary:
      'A hub list of scalars is one spoke string, the items joined by `separator` (and split back, each item coerced to the hub item type; an empty string is an empty list). Lossless, as in the reference, for items that do not hold the separator (one that does comes back as two).',
    hub: { dnsServers: arrayOf(string()) },
    spoke: { dnsServersCSV: string() },
    rules: [
      {
        strategy: 'ListJoin',
        listJoin: { hubPath: 'spec.dnsServers', spokePath: 'spec.dnsServersCSV', separator: ',' },
      },
    ],
    hubObject: { spec: { dnsServers: ['10.0.0.2', '10.0.0.3'] } },
    spokeObject: { spec: { dnsServersCSV: '1.1.1.1,8.8.8.8' } },
  },
  {
    strategy: 'ListSplit',
    summary: 'The mirror of ListJoin: a hub string is a spoke list, split on `separator`.',
    hub: { allowedCIDRsCSV: string() },
    spoke: { allowedCIDRs: arrayOf(string()) },
    rules: [
      {
        strategy: 'ListSplit',
        listSplit: { hubPath: 'spec.allowedCIDRsCSV', spokePath: 'spec.allowedCIDRs', separator: ',' },
      },
    ],
    hubObject: { spec: { allowedCIDRsCSV: '10.0.0.0/8,192.168.0.0/16' } },
    spokeObject: { spec: { allowedCIDRs: ['172.16.0.0/12'] } },
  },
  {
    strategy: 'Quantity',
    summary:
      'A Kubernetes quantity string on one side (`500m`, `1Gi`), its integer millivalue on the other; which side is the string is read from the schemas. The string comes back in canonical form (`0.5` becomes `500m`), so both directions are lossy.',
    hub: { cpuRequest: string() },
    spoke: { cpuMillis: integer },
    rules: [
      {
        strategy: 'Quantity',
        quantity: { hubPath: 'spec.cpuRequest', spokePath: 'spec.cpuMillis' },
        acknowledgeLossy: true,
        reason: 'millivalues re-format as the canonical quantity string',
      },
    ],
    hubObject: { spec: { cpuRequest: '1500m' } },
    spokeObject: { spec: { cpuMillis: 250 } },
  },
  {
    strategy: 'Duration',
    summary:
      "A Go duration string on one side (`1h30m`), whole seconds on the other. The string comes back in Go's canonical form (`5m` becomes `5m0s`), so both directions are lossy.",
    hub: { timeout: string() },
    spoke: { timeoutSeconds: integer },
    rules: [
      {
        strategy: 'Duration',
        duration: { hubPath: 'spec.timeout', spokePath: 'spec.timeoutSeconds' },
        acknowledgeLossy: true,
        reason: 'seconds re-format as the canonical duration string',
      },
    ],
    hubObject: { spec: { timeout: '1h30m' } },
    spokeObject: { spec: { timeoutSeconds: 300 } },
  },
  {
    strategy: 'ScalarToFields',
    summary:
      'A hub string split by a Go regular expression (RE2 syntax) whose named groups fill spoke fields, each coerced to its declared type; `joinTemplate` (Go text/template: `{{.name}}` and literal text) joins them back. Lossy unless `losslessOverride`, since the engine cannot prove the pattern and the template inverse.',
    hub: { diskSize: string() },
    spoke: { diskSizeValue: integer, diskSizeUnit: string() },
    rules: [
      {
        strategy: 'ScalarToFields',
        scalarToFields: {
          hubPath: 'spec.diskSize',
          pattern: '^(?P<value>\\d+)(?P<unit>[A-Za-z]+)$',
          spokeFields: { value: 'spec.diskSizeValue', unit: 'spec.diskSizeUnit' },
          joinTemplate: '{{.value}}{{.unit}}',
        },
        acknowledgeLossy: true,
        reason: 'values from one million up print in exponent form',
      },
    ],
    hubObject: { spec: { diskSize: '100Gi' } },
    spokeObject: { spec: { diskSizeValue: 20, diskSizeUnit: 'Ti' } },
  },
  {
    strategy: 'FieldsToScalar',
    summary:
      'The mirror of ScalarToFields: hub fields joined into one spoke string, split back by the pattern.',
    hub: { contactName: string(), contactEmail: string() },
    spoke: { contact: string() },
    rules: [
      {
        strategy: 'FieldsToScalar',
        fieldsToScalar: {
          hubFields: { name: 'spec.contactName', email: 'spec.contactEmail' },
          pattern: '^(?P<name>[^<]+) <(?P<email>[^>]+)>$',
          spokePath: 'spec.contact',
          joinTemplate: '{{.name}} <{{.email}}>',
          losslessOverride: true,
        },
      },
    ],
    hubObject: { spec: { contactName: 'Ada', contactEmail: 'ada@example.org' } },
    spokeObject: { spec: { contact: 'Grace <grace@example.org>' } },
  },
  {
    strategy: 'ToAnnotation',
    summary:
      'A field only the hub declares is kept, converting to the spoke, in an annotation (as JSON, or as the string itself with `serialization: String`), and restored from it converting back when `restoreOnReverse` is set (the annotation is then removed). Without `restoreOnReverse`, lossy both ways.',
    hub: { description: string() },
    spoke: {},
    rules: [
      {
        strategy: 'ToAnnotation',
        toAnnotation: { hubPath: 'spec.description', key: 'example.org/description', restoreOnReverse: true },
      },
    ],
    hubObject: { spec: { description: 'created at v2' } },
    spokeObject: { spec: {}, annotations: { 'example.org/description': '"written at v1"' } },
  },
  {
    strategy: 'ToLabel',
    summary:
      'As ToAnnotation, in a label: the key must be a valid label key and the value a valid label value, else the conversion fails.',
    hub: { tier: string() },
    spoke: {},
    rules: [
      {
        strategy: 'ToLabel',
        toLabel: { hubPath: 'spec.tier', key: 'tier', serialization: 'String', restoreOnReverse: true },
      },
    ],
    hubObject: { spec: { tier: 'gold' } },
    spokeObject: { spec: {}, labels: { tier: 'silver' } },
  },
  {
    strategy: 'FromAnnotation',
    summary:
      'The mirror of ToAnnotation: a field only the spoke declares is restored from a hub annotation converting to the spoke, and stashed there converting to the hub when `stashOnReverse` is set.',
    hub: {},
    spoke: { operatorNote: string() },
    rules: [
      {
        strategy: 'FromAnnotation',
        fromAnnotation: {
          spokePath: 'spec.operatorNote',
          key: 'example.org/operator-note',
          stashOnReverse: true,
        },
      },
    ],
    hubObject: { spec: {}, annotations: { 'example.org/operator-note': '"check quota"' } },
    spokeObject: { spec: { operatorNote: 'rotated keys' } },
  },
  {
    strategy: 'FromLabel',
    summary: 'The mirror of ToLabel: a spoke-only field kept in a hub label (strings only).',
    hub: {},
    spoke: { operatorTier: string() },
    rules: [
      {
        strategy: 'FromLabel',
        fromLabel: { spokePath: 'spec.operatorTier', key: 'operator-tier', stashOnReverse: true },
      },
    ],
    hubObject: { spec: {}, labels: { 'operator-tier': 'gold' } },
    spokeObject: { spec: { operatorTier: 'bronze' } },
  },
  {
    strategy: 'JSONPatch',
    summary:
      'RFC 6902 JSON Patch documents per direction, applied to the input; the paths they name are claimed. Lossy both ways unless `losslessOverride`, since the engine cannot prove the two patches inverse.',
    hub: { legacyFlag: string() },
    spoke: { legacyFlagV2: string() },
    rules: [
      {
        strategy: 'JSONPatch',
        jsonPatch: {
          hubToSpoke: [{ op: 'move', from: '/spec/legacyFlag', path: '/spec/legacyFlagV2' }],
          spokeToHub: [{ op: 'move', from: '/spec/legacyFlagV2', path: '/spec/legacyFlag' }],
          losslessOverride: true,
        },
      },
    ],
    hubObject: { spec: { legacyFlag: 'on' } },
    spokeObject: { spec: { legacyFlagV2: 'off' } },
  },
  {
    strategy: 'TypeCoerce',
    summary:
      'A scalar whose JSON type differs between the versions (string, integer, number or boolean), converted as Go\'s strconv reads and prints it. A fraction written into an integer fails (`onFractionalInteger: Error`, the default) or is truncated or rounded (lossy). Lossless as the reference counts it: a string spelled otherwise than its value prints (`"007"`) comes back as the value prints (`"7"`).',
    hub: { priority: integer },
    spoke: { priority: string() },
    rules: [{ strategy: 'TypeCoerce', typeCoerce: { path: 'spec.priority' } }],
    hubObject: { spec: { priority: 5 } },
    spokeObject: { spec: { priority: '10' } },
  },
  {
    strategy: 'NumericScale',
    summary:
      'A number scaled by a fixed factor (hub = spoke × factor). Lossless towards a `number` field, as the reference counts it (a factor that is not a power of two can leave a rounding error in the last digit); lossy towards an `integer` field, which is rounded half away from zero.',
    hub: { memoryMB: integer },
    spoke: { memoryGB: integer },
    rules: [
      {
        strategy: 'NumericScale',
        numericScale: { hubPath: 'spec.memoryMB', spokePath: 'spec.memoryGB', factor: 1024 },
        acknowledgeLossy: true,
        reason: 'GB are whole, so MB that are not a multiple of 1024 round',
      },
    ],
    hubObject: { spec: { memoryMB: 4096 } },
    spokeObject: { spec: { memoryGB: 8 } },
  },
];
