// Opting a namespace in to ConversionWebhookServers, as a platform team does it: the label the
// admission webhook and the instances-writes policy check, and the RoleBinding that lets the
// instances handler write there at all (deploy/rbac/instances.yaml). docs/security.md gives the
// same two steps as kubectl commands.
import type { V1RoleBinding } from '@kubernetes/client-node';
import { INSTANCE_NAMESPACE_LABEL, INSTANCE_NAMESPACE_OPTED_IN } from '../core/instance-admission.ts';

export const INSTANCES_NAMESPACE_ROLE = 'switchyard:instances-namespace';
const INSTANCES_SERVICE_ACCOUNT = 'switchyard-instances';

export const OPTED_IN_LABELS: Readonly<Record<string, string>> = {
  [INSTANCE_NAMESPACE_LABEL]: INSTANCE_NAMESPACE_OPTED_IN,
};

/** The binding of the instances handler's namespace role in `namespace`. */
export function instanceNamespaceBinding(namespace: string, operatorNamespace: string): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: {
      name: 'switchyard:instances',
      namespace,
      labels: { 'app.kubernetes.io/part-of': 'switchyard', 'app.kubernetes.io/component': 'instances' },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: INSTANCES_NAMESPACE_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: INSTANCES_SERVICE_ACCOUNT, namespace: operatorNamespace }],
  };
}
