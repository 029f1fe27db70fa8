// Renders docs/crd-reference.md by walking the OpenAPI schemas of the CRDs themselves, the
// ones deploy/crds/ carries, so the reference says exactly what the apiserver enforces and
// nothing a hand-kept list could drift into. scripts/gen-crds.ts writes it with the CRDs;
// crd-reference.test.ts fails when the committed file differs.
import { cell } from '../config/reference.ts';
import { type CustomResourceDefinition, switchyardCrds } from './crds.ts';
import type { StructuralSchema } from './openapi.ts';

/** Where the reference is written, from the repository root. */
export const CRD_REFERENCE_PATH = 'docs/crd-reference.md';

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

interface Field {
  path: string;
  node: StructuralSchema;
  required: boolean;
  /** A list item or map value: no row of its own (its list's row describes it), but it may carry CEL rules. */
  element: boolean;
}

/** Every node under `node`, depth first; list items are `[]`, map values `{}`. */
function* fieldsOf(node: StructuralSchema, path: string): Generator<Field> {
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const childPath = `${path}.${name}`;
    yield { path: childPath, node: child, required: node.required?.includes(name) ?? false, element: false };
    yield* fieldsOf(child, childPath);
  }
  for (const [element, suffix] of [
    [node.items, '[]'],
    [node.additionalProperties, '{}'],
  ] as const) {
    if (!element) continue;
    yield { path: `${path}${suffix}`, node: element, required: false, element: true };
    yield* fieldsOf(element, `${path}${suffix}`);
  }
}

function typeOf(node: StructuralSchema): string {
  if (node.items) {
    const keys = node['x-kubernetes-list-map-keys'];
    const keyed = keys ? `, one per ${keys.map((k) => `\`${k}\``).join(' + ')}` : '';
    return `list of ${typeOf(node.items)}${keyed}`;
  }
  if (node.additionalProperties) return `map of string to ${typeOf(node.additionalProperties)}`;
  if (node[PRESERVE]) return node.type === 'object' ? 'object, any fields' : 'any JSON value';
  return node.format ? `${node.type} (${node.format})` : (node.type ?? 'any JSON value');
}

function range(min: number | undefined, max: number | undefined, unit: string): string[] {
  if (min !== undefined && max !== undefined) return [`${unit} ${min}–${max}`];
  if (min !== undefined) return [`${unit} ≥ ${min}`];
  if (max !== undefined) return [`${unit} ≤ ${max}`];
  return [];
}

function boundsOf(node: StructuralSchema): string[] {
  const bounds = [
    ...(node.enum ? [`one of ${node.enum.map((v) => `\`${String(v)}\``).join(', ')}`] : []),
    ...range(node.minItems, node.maxItems, 'items'),
    ...range(node.minLength, node.maxLength, 'length'),
  ];
  if (node.minimum !== undefined) bounds.push(`${node.exclusiveMinimum ? '>' : '≥'} ${node.minimum}`);
  if (node.maximum !== undefined) bounds.push(`${node.exclusiveMaximum ? '<' : '≤'} ${node.maximum}`);
  if (node.pattern) bounds.push(`matches \`${node.pattern}\``);
  // A list of scalars has no rows for its items, so their bounds are stated on the list.
  const item = node.items && !node.items.properties ? boundsOf(node.items) : [];
  if (item.length > 0) bounds.push(`each: ${item.join(', ')}`);
  return bounds;
}

function fieldRow({ path, node, required }: Field): string {
  const description = node.description ?? node.items?.description ?? node.additionalProperties?.description;
  const cells = [
    `\`${path}\``,
    typeOf(node),
    required ? 'yes' : '',
    node.default === undefined ? '' : `\`${JSON.stringify(node.default)}\``,
    boundsOf(node).join('; '),
    description ?? '',
  ];
  return `| ${cells.map(cell).join(' | ')} |`;
}

function fieldTable(section: StructuralSchema, name: string): string[] {
  return [
    `### ${name}`,
    '',
    '| field | type | required | default | bounds | description |',
    '|---|---|---|---|---|---|',
    ...[...fieldsOf(section, name)].filter((f) => !f.element).map(fieldRow),
    '',
  ];
}

/** The CEL rules of the whole object, each at the field it is declared on. */
function validationTable(root: StructuralSchema): string[] {
  const nodes = [{ path: '', node: root }, ...fieldsOf(root, '')];
  const rows = nodes.flatMap(({ path, node }) =>
    (node['x-kubernetes-validations'] ?? []).map(
      (v) =>
        `| ${path === '' ? 'the object' : `\`${path.slice(1)}\``} | ${cell(v.message)} | \`${cell(v.rule)}\` |`,
    ),
  );
  if (rows.length === 0) return [];
  return [
    '### Validation rules',
    '',
    '| on | message when refused | CEL rule that must hold |',
    '|---|---|---|',
    ...rows,
    '',
  ];
}

function crdSection(crd: CustomResourceDefinition): string[] {
  const version = crd.spec.versions[0];
  if (!version) throw new Error(`${crd.metadata.name} has no version`);
  const root = version.schema.openAPIV3Schema;
  const { kind, shortNames } = crd.spec.names;
  const spec = root.properties?.spec;
  const status = root.properties?.status;
  if (!spec || !status) throw new Error(`${crd.metadata.name} lacks spec or status`);
  const columns = version.additionalPrinterColumns.map((c) => (c.priority ? `${c.name} (-o wide)` : c.name));
  return [
    `## ${kind}`,
    '',
    `\`${crd.metadata.name}\`, \`apiVersion: ${crd.spec.group}/${version.name}\`, ${crd.spec.scope.toLowerCase()}-scoped, short name${shortNames.length > 1 ? 's' : ''} ${shortNames.map((n) => `\`${n}\``).join(', ')}. ${root.description ?? ''}`,
    '',
    `\`kubectl get\` columns: ${columns.join(', ')}.`,
    '',
    ...fieldTable(spec, 'spec'),
    ...fieldTable(status, 'status'),
    ...validationTable(root),
  ];
}

export function renderCrdReference(): string {
  return [
    '<!-- Generated by scripts/gen-crds.ts (src/api/crd-reference.ts) from the zod schemas in src/api. Do not edit. -->',
    '# CRD reference',
    '',
    'Every field of the spec and status of the CustomResourceDefinitions Switchyard installs',
    '(`deploy/crds/`), walked from the same OpenAPI schema those files carry. Regenerate',
    'with `node scripts/gen-crds.ts` after changing a schema in `src/api/`; a unit test',
    '(`src/api/crd-reference.test.ts`) fails while this file and the schemas disagree.',
    '',
    '* A path ending in `[]` is each item of a list; `{}` each value of a map.',
    '* *required*: must be set whenever the object holding it is set. A field that',
    '  only some rule strategies take is optional here, and a CEL rule (the',
    '  *Validation rules* of each kind) says when it is required.',
    '* *default*: the value the apiserver fills in when the field is absent.',
    '* The admission webhook parses each spec with the same zod schemas and checks',
    '  what no schema can, such as one default instance and one config per target',
    '  (`docs/admission.md`).',
    '',
    ...switchyardCrds().flatMap(crdSection),
  ].join('\n');
}
