// The REST resources of the project's own kinds, by recorded kind (subjects.ts), for the
// handlers that write their status: one table, so a handler names a kind, never a path.
import { API_VERSION } from '../api/constants.ts';
import { CRD_CONFIG_KIND, XRD_CONFIG_KIND } from '../api/conversion-config.ts';
import { WEBHOOK_SERVER_KIND } from '../api/webhook-server.ts';
import type { ResourceRef } from '../kube/writer.ts';

export type ProjectResource = ResourceRef & { kind: string };

export const PROJECT_RESOURCES: Readonly<Record<string, ProjectResource>> = {
  crdconfig: {
    apiVersion: API_VERSION,
    resource: 'crdconversionconfigs',
    namespaced: false,
    kind: CRD_CONFIG_KIND,
  },
  xrdconfig: {
    apiVersion: API_VERSION,
    resource: 'xrdconversionconfigs',
    namespaced: false,
    kind: XRD_CONFIG_KIND,
  },
  webhookserver: {
    apiVersion: API_VERSION,
    resource: 'conversionwebhookservers',
    namespaced: false,
    kind: WEBHOOK_SERVER_KIND,
  },
};
