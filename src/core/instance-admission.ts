// What a ConversionWebhookServer may ask Switchyard to run, as pure rules. Switchyard renders an
// instance with its own identity, so without these rules whoever may create an instance could run
// any image, as any ServiceAccount, with any flags, in any namespace: more than they could do
// themselves. The admission webhook applies them with messages that say how to fix each; the
// shipped ValidatingAdmissionPolicy (api/admission-policies.ts) applies the same rules when the
// webhook is down, from the same key list and the same ConfigMap of allowances.

/** The label a platform team sets on a namespace to let instances run in it. */
export const INSTANCE_NAMESPACE_LABEL = 'switchyard.dev/instances';
export const INSTANCE_NAMESPACE_OPTED_IN = 'allowed';

/**
 * The webhook-server's own configuration keys a user may tune through spec.extraArgs, as
 * `--<key>=<value>`. Left out on purpose: the managed flags (--instance, --port, --tls-dir), the
 * bus address and credentials (nats.*: a replica pointed at another bus serves what that bus
 * says), `--config` (a file of every key), the bus layout (bus.*, shared by the whole fleet), and
 * the test-only webhook.unsafeDropPlanOnReassign.
 */
export const EXTRA_ARG_KEYS = [
  'kubernetes.qps',
  'kubernetes.burst',
  'kubernetes.eventQPS',
  'kubernetes.eventBurst',
  'kubernetes.eventQueueSize',
  'log.level',
  'view.checkEveryMilliseconds',
  'view.maxLagSeconds',
  'view.restartAfterSeconds',
  'webhook.drainSeconds',
] as const;

/** One pattern for both enforcers: the webhook tests it here, the policy's CEL `matches` it. */
export const EXTRA_ARG_PATTERN = `^--(${EXTRA_ARG_KEYS.map((k) => k.replaceAll('.', '\\.')).join('|')})=[^\\s]+$`;
const extraArgPattern = new RegExp(EXTRA_ARG_PATTERN);

/**
 * What a platform team allows beyond the defaults, in one ConfigMap of the operator's namespace:
 * the admission webhook reads it at every instance review, and the policy switchyard-instance-spec
 * takes it as its parameter, so both enforce the same lists the moment it changes.
 */
export const INSTANCE_POLICY_CONFIGMAP = 'switchyard-instance-policy';

export interface InstanceAllowances {
  allowedImageRepositories: readonly string[];
  allowServiceAccountName: boolean;
  /** Configuration keys spec.extraArgs may set beyond EXTRA_ARG_KEYS. */
  allowedExtraArgKeys: readonly string[];
}

export interface InstancePolicy extends InstanceAllowances {
  /** Where an instance without spec.namespace runs: Switchyard's own, always allowed. */
  operatorNamespace: string;
}

/**
 * The ConfigMap's data read as the policy's CEL reads it: the lists split on commas, each entry
 * trimmed, empty ones dropped; `allowServiceAccountName` only when "true".
 */
export function allowancesOf(data: Readonly<Record<string, string>> | undefined): InstanceAllowances {
  const list = (text: string | undefined) =>
    (text ?? '')
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== '');
  return {
    allowedImageRepositories: list(data?.allowedImageRepositories),
    allowServiceAccountName: data?.allowServiceAccountName === 'true',
    allowedExtraArgKeys: list(data?.allowedExtraArgKeys),
  };
}

/** `--<key>=<value>` for one of `keys`, as the policy's CEL tests it (startsWith, then a value). */
function setsOneOf(arg: string, keys: readonly string[]): boolean {
  return keys.some((key) => arg.startsWith(`--${key}=`) && arg.length > key.length + 3);
}

/** The part of an instance's spec the rules read; the CRD schema has typed it already. */
export interface InstanceRequestLike {
  name: string;
  spec: {
    namespace?: string | undefined;
    image?: { repository?: string | undefined } | undefined;
    serviceAccountName?: string | undefined;
    extraArgs?: readonly string[] | undefined;
  };
}

/** The instance's namespace as read: absent when it does not exist. */
export type NamespaceRead = { exists: false } | { exists: true; labels: Readonly<Record<string, string>> };

function instanceNamespaceOf(instance: InstanceRequestLike, policy: InstancePolicy): string {
  return instance.spec.namespace ?? policy.operatorNamespace;
}

/** Every rule the instance breaks, each as a message that says how to fix it. */
export function instancePolicyViolations(
  instance: InstanceRequestLike,
  policy: InstancePolicy,
  namespace: NamespaceRead,
): string[] {
  return [
    namespaceViolation(instance, policy, namespace),
    imageViolation(instance, policy),
    serviceAccountViolation(instance, policy),
    ...extraArgViolations(instance, policy),
  ].filter((v): v is string => v !== undefined);
}

function namespaceViolation(
  instance: InstanceRequestLike,
  policy: InstancePolicy,
  read: NamespaceRead,
): string | undefined {
  const namespace = instanceNamespaceOf(instance, policy);
  if (namespace === policy.operatorNamespace) return undefined;
  const optIn = `${INSTANCE_NAMESPACE_LABEL}=${INSTANCE_NAMESPACE_OPTED_IN}`;
  if (!read.exists)
    return `spec.namespace "${namespace}" does not exist: create it, and have a platform team opt it in (label ${optIn} and bind the instances role there, docs/security.md)`;
  if (read.labels[INSTANCE_NAMESPACE_LABEL] === INSTANCE_NAMESPACE_OPTED_IN) return undefined;
  return `namespace "${namespace}" does not run ConversionWebhookServers: a platform team opts it in with the label ${optIn} and a RoleBinding for Switchyard's instances role there (docs/security.md), or leave spec.namespace unset to run in ${policy.operatorNamespace}`;
}

function imageViolation(instance: InstanceRequestLike, policy: InstancePolicy): string | undefined {
  const repository = instance.spec.image?.repository;
  if (repository === undefined || policy.allowedImageRepositories.includes(repository)) return undefined;
  const allowed =
    policy.allowedImageRepositories.length === 0
      ? 'none is allowed besides the project’s own'
      : `allowed: ${policy.allowedImageRepositories.join(', ')}`;
  return `spec.image.repository "${repository}" is not an allowed image (${allowed}): leave it unset to run Switchyard's own image, or have a platform team add it to allowedImageRepositories in ConfigMap ${policy.operatorNamespace}/${INSTANCE_POLICY_CONFIGMAP}`;
}

function serviceAccountViolation(instance: InstanceRequestLike, policy: InstancePolicy): string | undefined {
  if (instance.spec.serviceAccountName === undefined || policy.allowServiceAccountName) return undefined;
  return `spec.serviceAccountName is not allowed: the replicas run as the ServiceAccount Switchyard renders for "${instance.name}"; remove the field, or have a platform team set allowServiceAccountName: "true" in ConfigMap ${policy.operatorNamespace}/${INSTANCE_POLICY_CONFIGMAP}`;
}

function extraArgViolations(instance: InstanceRequestLike, policy: InstancePolicy): string[] {
  return (instance.spec.extraArgs ?? [])
    .filter((arg) => !extraArgPattern.test(arg) && !setsOneOf(arg, policy.allowedExtraArgKeys))
    .map(
      (arg) =>
        `spec.extraArgs: ${JSON.stringify(arg)} is not a webhook-server setting a user may change; each entry is --<key>=<value>, key one of ${[...EXTRA_ARG_KEYS, ...policy.allowedExtraArgKeys].join(', ')} (a platform team adds keys with allowedExtraArgKeys in ConfigMap ${policy.operatorNamespace}/${INSTANCE_POLICY_CONFIGMAP})`,
    );
}
