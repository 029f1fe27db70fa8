import type { V1ClusterRole } from '@kubernetes/client-node';

/** What the local node agent may do: a kubelet's and an endpoint publisher's share, nothing else. */
export const nodeAgentClusterRole: V1ClusterRole = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'switchyard:local-node-agent' },
  rules: [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'create'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'delete'] },
    { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
    { apiGroups: [''], resources: ['pods/binding'], verbs: ['create'] },
    { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
    // Secret volumes (a kubelet reads only its pods' Secrets; this stand-in watches them all).
    { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'create', 'delete'] },
  ],
};
