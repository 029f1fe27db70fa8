// The ValidatingAdmissionPolicies Switchyard ships (deploy/policies/, written by
// scripts/gen-policies.ts). They are evaluated by the apiserver itself, so they hold while the
// admission webhook is down, and they fence Switchyard's own identities: a compromised or buggy
// component is refused by the apiserver, not trusted to hold back. docs/security.md says what each
// one closes. The identities are named as deploy/ installs them, in switchyard-system: install into
// another namespace and these user names must change with it.
import { stringify } from 'yaml';
import {
  EXTRA_ARG_PATTERN,
  INSTANCE_NAMESPACE_LABEL,
  INSTANCE_NAMESPACE_OPTED_IN,
  INSTANCE_POLICY_CONFIGMAP,
} from '../core/instance-admission.ts';
import {
  DEFAULT_OPERATOR_NAMESPACE,
  GROUP,
  HANDOVER_SERVICE_ACCOUNT,
  HANDOVER_VERDICT_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVED_LEASE_PREFIX,
  SERVICE_SUFFIX,
} from './constants.ts';
import { CONFIG_TARGET_FIELD, CRD_CONFIG_KIND, XRD_CONFIG_KIND } from './conversion-config.ts';

/** Where the policies' parameters and the ServiceAccounts they name live: the namespace deploy/ installs into. */
export const POLICY_NAMESPACE = DEFAULT_OPERATOR_NAMESPACE;

const serviceAccountUser = (name: string) => `system:serviceaccount:${POLICY_NAMESPACE}:${name}`;
export const INSTANCES_USER = serviceAccountUser('switchyard-instances');
export const HANDOVER_USER = serviceAccountUser(HANDOVER_SERVICE_ACCOUNT);

const LABELS = {
  'app.kubernetes.io/part-of': 'switchyard',
  'app.kubernetes.io/component': 'admission-policies',
};
const POD_NAME_EXTRA = 'authentication.kubernetes.io/pod-name';

interface ResourceRule {
  apiGroups: string[];
  apiVersions: string[];
  operations: string[];
  resources: string[];
}
interface Validation {
  expression: string;
  messageExpression?: string;
  message?: string;
  reason?: 'Forbidden' | 'Invalid';
}
interface PolicyParts {
  name: string;
  rules: ResourceRule[];
  matchConditions: { name: string; expression: string }[];
  variables?: { name: string; expression: string }[];
  validations: Validation[];
  params?: { configMap: string };
}

export interface PolicyObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels: Record<string, string>; namespace?: string };
  [field: string]: unknown;
}

const rule = (apiGroup: string, resources: string[], operations = ['CREATE', 'UPDATE']): ResourceRule => ({
  apiGroups: [apiGroup],
  apiVersions: ['*'],
  operations,
  resources,
});

/** CEL: a string literal (single-quoted, backslashes and quotes escaped). */
const cel = (text: string) => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
/** CEL: the map's value at key equals value, false when the map or key is absent. */
const hasEntry = (map: string, key: string, value: string) =>
  `(has(${map}) && ${cel(key)} in ${map} && ${map}[${cel(key)}] == ${cel(value)})`;
const orEmpty = (map: string, field: string) => `${map}.?${field}.orValue({})`;
/** CEL: a comma-separated list of the parameter ConfigMap, as core/instance-admission.ts's allowancesOf reads it. */
const paramList = (key: string) =>
  `params.data.?${key}.orValue('').split(',').map(r, r.trim()).filter(r, r != '')`;
const SPEC_CHANGED = {
  name: 'spec-changed',
  expression: "request.operation == 'CREATE' || object.spec != oldObject.spec",
};

function instanceSpec(): PolicyParts {
  const image = 'object.spec.image.repository';
  return {
    name: 'switchyard-instance-spec',
    params: { configMap: INSTANCE_POLICY_CONFIGMAP },
    rules: [rule(GROUP, ['conversionwebhookservers'])],
    matchConditions: [SPEC_CHANGED],
    variables: [
      { name: 'allowedImages', expression: paramList('allowedImageRepositories') },
      { name: 'allowedExtraArgKeys', expression: paramList('allowedExtraArgKeys') },
    ],
    validations: [
      {
        expression: `!has(object.spec.image) || !has(${image}) || ${image} in variables.allowedImages`,
        messageExpression: `'spec.image.repository "' + ${image} + '" is not an allowed image: leave it unset to run Switchyard\\'s own image, or have a platform team add it to allowedImageRepositories in ConfigMap ${POLICY_NAMESPACE}/${INSTANCE_POLICY_CONFIGMAP}'`,
        reason: 'Forbidden',
      },
      {
        expression:
          "!has(object.spec.serviceAccountName) || params.data.?allowServiceAccountName.orValue('false') == 'true'",
        message: `spec.serviceAccountName is not allowed: the replicas run as the ServiceAccount Switchyard renders for the instance; remove the field, or have a platform team set allowServiceAccountName: "true" in ConfigMap ${POLICY_NAMESPACE}/${INSTANCE_POLICY_CONFIGMAP}`,
        reason: 'Forbidden',
      },
      {
        expression:
          `!has(object.spec.extraArgs) || object.spec.extraArgs.all(a, a.matches(${cel(EXTRA_ARG_PATTERN)}) || ` +
          "variables.allowedExtraArgKeys.exists(k, a.startsWith('--' + k + '=') && a.size() > k.size() + 3))",
        message: `spec.extraArgs: every entry must be --<key>=<value> with a webhook-server tuning key (docs/security.md lists them) or a key of allowedExtraArgKeys in ConfigMap ${POLICY_NAMESPACE}/${INSTANCE_POLICY_CONFIGMAP}`,
        reason: 'Forbidden',
      },
      {
        // Whoever places an instance in a namespace could otherwise run Pods there with
        // Switchyard's identity without being allowed to run Pods there themselves.
        expression:
          "!('namespace' in object.spec) || authorizer.group('apps').resource('deployments').namespace(object.spec['namespace']).check('create').allowed()",
        messageExpression:
          "'you may not create Deployments in namespace ' + object.spec['namespace'] + ' yourself, so you may not have Switchyard run an instance there'",
        reason: 'Forbidden',
      },
    ],
  };
}

/** A config makes Switchyard rewrite its target's conversion: only someone who could do it themselves may ask. */
function configTargetOwner(
  configs: string,
  target: string,
  group: string,
  resource: string,
  kind: string,
): PolicyParts {
  const name = `object.spec.${target}.name`;
  return {
    name: `switchyard-${configs}-target-owner`,
    rules: [rule(GROUP, [configs])],
    matchConditions: [SPEC_CHANGED],
    validations: [
      {
        expression: `!has(object.spec.${target}) || authorizer.group(${cel(group)}).resource(${cel(resource)}).name(${name}).check('patch').allowed()`,
        messageExpression: `'you may not patch ${kind} ' + ${name} + ' yourself, so you may not have Switchyard repoint its conversion: ask whoever owns it to create this config'`,
        reason: 'Forbidden',
      },
    ],
  };
}

/** The instances handler writes only Switchyard's own objects, only in namespaces that opted in. */
function instancesWrites(): PolicyParts {
  const managed = (o: string) => hasEntry(`${o}.metadata.labels`, MANAGED_BY_LABEL, MANAGED_BY_VALUE);
  return {
    name: 'switchyard-instances-writes',
    rules: [
      rule('apps', ['deployments']),
      rule('', ['services', 'serviceaccounts', 'secrets']),
      rule('rbac.authorization.k8s.io', ['roles', 'rolebindings']),
      rule('policy', ['poddisruptionbudgets']),
      rule('networking.k8s.io', ['networkpolicies']),
      rule('coordination.k8s.io', ['leases']),
    ],
    matchConditions: [
      { name: 'instances-identity', expression: `request.userInfo.username == ${cel(INSTANCES_USER)}` },
    ],
    validations: [
      {
        expression: hasEntry(
          'namespaceObject.metadata.labels',
          INSTANCE_NAMESPACE_LABEL,
          INSTANCE_NAMESPACE_OPTED_IN,
        ),
        messageExpression: `'namespace ' + namespaceObject.metadata.name + ' has not opted in to ConversionWebhookServers (label ${INSTANCE_NAMESPACE_LABEL}=${INSTANCE_NAMESPACE_OPTED_IN})'`,
        reason: 'Forbidden',
      },
      {
        expression: `${managed('object')} && (request.operation != 'UPDATE' || ${managed('oldObject')})`,
        message: `the instances handler writes only objects labelled ${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}, and never takes over one that was not`,
        reason: 'Forbidden',
      },
    ],
  };
}

/**
 * The handover changes a target's spec.conversion, pointing it at a Switchyard webhook-server
 * Service, and its own verdict annotation; nothing else of the target. `fields` are the spec
 * fields both kinds of target declare that must stay as they are.
 */
function handoverConversionOnly(
  name: string,
  group: string,
  resource: string,
  fields: readonly string[],
): PolicyParts {
  const service = 'object.spec.conversion.webhook.clientConfig.service';
  const verdict = cel(HANDOVER_VERDICT_ANNOTATION);
  return {
    name,
    rules: [rule(group, [resource], ['UPDATE'])],
    matchConditions: [
      { name: 'handover-identity', expression: `request.userInfo.username == ${cel(HANDOVER_USER)}` },
    ],
    variables: [
      { name: 'newAnnotations', expression: orEmpty('object.metadata', 'annotations') },
      { name: 'oldAnnotations', expression: orEmpty('oldObject.metadata', 'annotations') },
    ],
    validations: [
      {
        expression: fields.map((f) => `object.spec.?${f} == oldObject.spec.?${f}`).join(' && '),
        message: `the handover changes only spec.conversion of a target (${fields.map((f) => `spec.${f}`).join(', ')} must stay as they are)`,
        reason: 'Forbidden',
      },
      {
        expression: ['labels', 'finalizers', 'ownerReferences']
          .map((f) => `${orEmpty('object.metadata', f)} == ${orEmpty('oldObject.metadata', f)}`)
          .join(' && '),
        message: 'the handover changes no label, finalizer or owner of a target',
        reason: 'Forbidden',
      },
      {
        expression:
          `variables.newAnnotations.all(k, k == ${verdict} || (k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.newAnnotations[k])) && ` +
          `variables.oldAnnotations.all(k, k == ${verdict} || k in variables.newAnnotations)`,
        message: `the handover changes no annotation of a target but ${HANDOVER_VERDICT_ANNOTATION}`,
        reason: 'Forbidden',
      },
      {
        expression:
          "!has(object.spec.conversion) || object.spec.conversion.strategy == 'None' || " +
          `(has(object.spec.conversion.webhook) && has(object.spec.conversion.webhook.clientConfig) && has(${service}) && ${service}.name.endsWith(${cel(SERVICE_SUFFIX)}))`,
        message: `the handover points a target's conversion only at a Switchyard webhook-server Service (*${SERVICE_SUFFIX})`,
        reason: 'Forbidden',
      },
    ],
  };
}

/** A webhook-server replica writes one Lease: its own served-set report, named after its Pod. */
function replicaLeases(): PolicyParts {
  const pod = `request.userInfo.extra[${cel(POD_NAME_EXTRA)}][0]`;
  return {
    name: 'switchyard-replica-leases',
    rules: [rule('coordination.k8s.io', ['leases'])],
    matchConditions: [
      {
        name: 'webhook-server-identity',
        expression: `request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(${cel(SERVICE_SUFFIX)})`,
      },
    ],
    validations: [
      {
        expression: `${cel(POD_NAME_EXTRA)} in request.userInfo.extra && object.metadata.name == ${cel(`${SERVED_LEASE_PREFIX}-served-`)} + ${pod}`,
        messageExpression: `'a webhook-server replica writes only its own served-set Lease (${SERVED_LEASE_PREFIX}-served-<its Pod>), not ' + object.metadata.name`,
        reason: 'Forbidden',
      },
    ],
  };
}

function policyObjects(parts: PolicyParts): PolicyObject[] {
  const { name, params } = parts;
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: LABELS },
      spec: {
        failurePolicy: 'Fail',
        ...(params && { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } }),
        matchConstraints: { resourceRules: parts.rules },
        matchConditions: parts.matchConditions,
        ...(parts.variables && { variables: parts.variables }),
        validations: parts.validations,
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels: LABELS },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        ...(params && {
          paramRef: { name: params.configMap, namespace: POLICY_NAMESPACE, parameterNotFoundAction: 'Deny' },
        }),
      },
    },
  ];
}

/** The ConfigMap of deploy/: nothing allowed beyond the defaults until a platform team says so. */
export function instancePolicyConfigMap(): PolicyObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: INSTANCE_POLICY_CONFIGMAP, namespace: POLICY_NAMESPACE, labels: LABELS },
    data: { allowedImageRepositories: '', allowServiceAccountName: 'false', allowedExtraArgKeys: '' },
  };
}

/** Every policy file of deploy/policies/, by file name. */
export function policyFiles(): Map<string, PolicyObject[]> {
  const crdFields = ['group', 'names', 'scope', 'versions', 'preserveUnknownFields'];
  return new Map([
    ['instance-policy-configmap.yaml', [instancePolicyConfigMap()]],
    ['instance-spec.yaml', policyObjects(instanceSpec())],
    [
      'config-target-owner.yaml',
      [
        ...policyObjects(
          configTargetOwner(
            'crdconversionconfigs',
            CONFIG_TARGET_FIELD[CRD_CONFIG_KIND],
            'apiextensions.k8s.io',
            'customresourcedefinitions',
            'CustomResourceDefinition',
          ),
        ),
        ...policyObjects(
          configTargetOwner(
            'xrdconversionconfigs',
            CONFIG_TARGET_FIELD[XRD_CONFIG_KIND],
            'apiextensions.crossplane.io',
            'compositeresourcedefinitions',
            'CompositeResourceDefinition',
          ),
        ),
      ],
    ],
    ['instances-writes.yaml', policyObjects(instancesWrites())],
    [
      'handover-conversion-only.yaml',
      [
        ...policyObjects(
          handoverConversionOnly(
            'switchyard-handover-crd-conversion-only',
            'apiextensions.k8s.io',
            'customresourcedefinitions',
            crdFields,
          ),
        ),
        // Crossplane's XRD schema varies by release; these three are in every one.
        ...policyObjects(
          handoverConversionOnly(
            'switchyard-handover-xrd-conversion-only',
            'apiextensions.crossplane.io',
            'compositeresourcedefinitions',
            ['group', 'names', 'versions'],
          ),
        ),
      ],
    ],
    ['replica-leases.yaml', policyObjects(replicaLeases())],
  ]);
}

const HEADER = '# Generated by scripts/gen-policies.ts from src/api/admission-policies.ts. Do not edit.\n';

export function renderPolicyFile(objects: readonly PolicyObject[]): string {
  return (
    HEADER + objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n')
  );
}

export function renderPolicyKustomization(files: readonly string[]): string {
  return `${HEADER}# What holds when the admission webhook is down, and what fences Switchyard's own identities (docs/security.md).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
${files.map((f) => `  - ${f}`).join('\n')}
`;
}
