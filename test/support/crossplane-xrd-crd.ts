// Crossplane's API without Crossplane: the CustomResourceDefinition of
// compositeresourcedefinitions.apiextensions.crossplane.io (XRDs), so that an XRD target can be
// tested on the local cluster. Crossplane itself is not started here and does not run: nothing
// turns an XRD into its composite CRD; a test that needs that starts Crossplane
// (src/local-cluster/crossplane.ts `startCrossplane`, as test/crossplane.itest.ts does).
//
// The CRD is Crossplane's own, as generated in its source (cluster/crds/), from the snapshot the
// bootstrap builds Crossplane from (`ensure_crossplane`: SWITCHYARD_CROSSPLANE_DIR), applied
// server-side: the apiserver stores and validates an XRD exactly as it does where Crossplane is
// installed, and only this one CRD of Crossplane's is installed, so that its removal takes
// Crossplane's group out of discovery again.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrossplaneCrds,
  removeCrossplaneCrds,
  XRD_CRD_FILE,
} from '../../src/local-cluster/crossplane.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { servesGroupVersion } from '../../src/watchers/list-objects.ts';

export const XRD_GROUP = 'apiextensions.crossplane.io';
export const XRD_VERSION = 'v1';
export const XRD_PLURAL = 'compositeresourcedefinitions';
export const XRD_CRD_NAME = `${XRD_PLURAL}.${XRD_GROUP}`;
const GROUP_VERSION_PATH = `/apis/${XRD_GROUP}/${XRD_VERSION}`;

/** A v1 XRD version whose spec has one integer field: what conversion tests rename between versions. */
export const xrdVersion = (name: string, field: string, referenceable: boolean) => ({
  name,
  served: true,
  referenceable,
  schema: {
    openAPIV3Schema: {
      type: 'object',
      properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } },
    },
  },
});

/**
 * Installs the XRD API and waits until discovery serves its group version: the watchers decide
 * whether to record XRDs by that discovery read, at start and every discovery period
 * (src/watchers/xrd-recorder.ts), and the apiserver publishes a CRD's discovery only after the
 * CRD is Established.
 */
export async function installCrossplaneXrdApi(admin: KubeConfig): Promise<void> {
  await applyCrossplaneCrds(admin, { files: [XRD_CRD_FILE] });
  await waitFor(
    `discovery serves ${GROUP_VERSION_PATH}`,
    async () => ((await servesGroupVersion(admin, GROUP_VERSION_PATH)) ? true : undefined),
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/**
 * Deletes the XRD API and waits until the CRD is gone and discovery no longer serves the group:
 * a `switchyard watch` started afterwards (another test file's) must not find Crossplane's API
 * in discovery and then fail to list a resource that is being removed.
 */
export async function removeCrossplaneXrdApi(admin: KubeConfig): Promise<void> {
  await removeCrossplaneCrds(admin, { files: [XRD_CRD_FILE] });
  await waitFor(
    `${XRD_CRD_NAME} out of discovery`,
    async () => (!(await servesGroupVersion(admin, GROUP_VERSION_PATH)) ? true : undefined),
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}
