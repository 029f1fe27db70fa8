// The CustomResourceDefinitions of the API, generated from the zod schemas. `scripts/gen-crds.ts`
// writes them to deploy/crds/; a unit test fails when the committed files drift from this.
import type { z } from 'zod';
import { GROUP, MAX_INSTANCE_NAME_LENGTH, VERSION } from './constants.ts';
import {
  CRD_CONFIG_KIND,
  configStatusSchema,
  configTargetNamePath,
  crdConfigSpecSchema,
  XRD_CONFIG_KIND,
  xrdConfigSpecSchema,
} from './conversion-config.ts';
import { DNS_1035_LABEL_PATTERN } from './names.ts';
import { type CelValidation, type StructuralSchema, toStructural } from './openapi.ts';
import { WEBHOOK_SERVER_KIND, webhookServerSpecSchema, webhookServerStatusSchema } from './webhook-server.ts';

interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'boolean' | 'date';
  jsonPath: string;
  priority?: number;
  description?: string;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    scope: 'Cluster';
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    versions: Array<{
      name: string;
      served: true;
      storage: true;
      schema: { openAPIV3Schema: StructuralSchema };
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
      selectableFields?: Array<{ jsonPath: string }>;
    }>;
  };
}

interface ResourceDefinition {
  kind: string;
  plural: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  rootValidations: CelValidation[];
  columns: PrinterColumn[];
  /** Fields a list or watch may select on (`--field-selector`), besides metadata.name. */
  selectableFields: string[];
}

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

const configColumns = (kind: typeof CRD_CONFIG_KIND | typeof XRD_CONFIG_KIND): PrinterColumn[] => [
  { name: 'Target', type: 'string', jsonPath: `.${configTargetNamePath(kind)}` },
  { name: 'Hub', type: 'string', jsonPath: '.spec.hubVersion' },
  { name: 'Server', type: 'string', jsonPath: '.status.assignedWebhookServer' },
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Lossless', type: 'boolean', jsonPath: '.status.overallLossless' },
  {
    name: 'Handover',
    type: 'string',
    jsonPath: '.status.conditions[?(@.type=="HandoverReady")].reason',
    priority: 1,
  },
  AGE,
];

const RESOURCES: ResourceDefinition[] = [
  {
    kind: WEBHOOK_SERVER_KIND,
    plural: 'conversionwebhookservers',
    shortNames: ['cws'],
    description: 'An instance of conversion webhook-server replicas behind one Service.',
    spec: webhookServerSpecSchema,
    status: webhookServerStatusSchema,
    rootValidations: [
      {
        rule: `self.metadata.name.size() <= ${MAX_INSTANCE_NAME_LENGTH}`,
        message: `name must be at most ${MAX_INSTANCE_NAME_LENGTH} characters: it prefixes the instance's Service name <name>-webhook-server, a DNS-1035 label of at most 63`,
      },
      {
        rule: `self.metadata.name.matches('${DNS_1035_LABEL_PATTERN}')`,
        message:
          "name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, ending with a letter or digit): it names the instance's Service <name>-webhook-server",
      },
    ],
    columns: [
      { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
      { name: 'Sharded', type: 'boolean', jsonPath: '.spec.sharding.enabled' },
      { name: 'Weight', type: 'integer', jsonPath: '.spec.sharding.weight', priority: 1 },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
      { name: 'Reporting', type: 'integer', jsonPath: '.status.reportingReplicas' },
      { name: 'Assigned', type: 'integer', jsonPath: '.status.assignedTargetCount' },
      AGE,
    ],
    selectableFields: [],
  },
  {
    kind: CRD_CONFIG_KIND,
    plural: 'crdconversionconfigs',
    shortNames: ['crdcc'],
    description: 'How to convert the objects of one CustomResourceDefinition between its versions.',
    spec: crdConfigSpecSchema,
    status: configStatusSchema,
    rootValidations: [],
    columns: configColumns(CRD_CONFIG_KIND),
    // The admission webhook reads the configs of one target (a unique-target check, the
    // handover's repoint) by this field, not by listing every config for every write.
    selectableFields: [`.${configTargetNamePath(CRD_CONFIG_KIND)}`],
  },
  {
    kind: XRD_CONFIG_KIND,
    plural: 'xrdconversionconfigs',
    shortNames: ['xrdcc'],
    description:
      'How to convert the objects of one Crossplane CompositeResourceDefinition between its versions.',
    spec: xrdConfigSpecSchema,
    status: configStatusSchema,
    rootValidations: [],
    columns: configColumns(XRD_CONFIG_KIND),
    // The admission webhook reads the configs of one target (a unique-target check, the
    // handover's repoint) by this field, not by listing every config for every write.
    selectableFields: [`.${configTargetNamePath(XRD_CONFIG_KIND)}`],
  },
];

function rootSchema(resource: ResourceDefinition): StructuralSchema {
  const root: StructuralSchema = {
    type: 'object',
    description: resource.description,
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec: toStructural(resource.spec),
      status: toStructural(resource.status),
    },
    required: ['spec'],
  };
  if (resource.rootValidations.length > 0) root['x-kubernetes-validations'] = resource.rootValidations;
  return root;
}

function toCrd(resource: ResourceDefinition): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${resource.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/part-of': 'switchyard', 'app.kubernetes.io/component': 'api' },
    },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: {
        kind: resource.kind,
        listKind: `${resource.kind}List`,
        plural: resource.plural,
        singular: resource.kind.toLowerCase(),
        shortNames: resource.shortNames,
        categories: ['switchyard'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: rootSchema(resource) },
          subresources: { status: {} },
          additionalPrinterColumns: resource.columns,
          ...(resource.selectableFields.length > 0 && {
            selectableFields: resource.selectableFields.map((jsonPath) => ({ jsonPath })),
          }),
        },
      ],
    },
  };
}

/** The project's CRDs, ready to apply (the integration tests apply exactly these). */
export function switchyardCrds(): CustomResourceDefinition[] {
  return RESOURCES.map(toCrd);
}

/** The file under deploy/crds/ each CRD is written to. */
export function crdFileName(crd: CustomResourceDefinition): string {
  return `${crd.metadata.name}.yaml`;
}
