// The rule the admission webhook holds the handover identity to on the targets themselves: it
// may change a CRD's (or XRD's) conversion only while a config of the matching kind targets it.
// The ValidatingAdmissionPolicies (api/admission-policies.ts) already keep it to spec.conversion
// and to Switchyard's own Services, but a policy cannot look up configs: without this rule a
// compromised handover could point any CRD of the cluster at a webhook-server that has no plan
// for it, and every read of that CRD's objects at another version would fail.
//
// Only a change of spec.conversion is held to it (the webhook's matchConditions send nothing
// else): the verdict annotation the handover writes beside a move never waits on this rule.
import { CRD_CONFIG_KIND, XRD_CONFIG_KIND } from '../api/conversion-config.ts';
import type { ConfigIdentity } from './config-admission.ts';

export type HandoverTargetKind = 'CustomResourceDefinition' | 'CompositeResourceDefinition';

/** The config kind that targets each target kind. */
const CONFIG_KIND_OF: Record<HandoverTargetKind, string> = {
  CustomResourceDefinition: CRD_CONFIG_KIND,
  CompositeResourceDefinition: XRD_CONFIG_KIND,
};

/** Why the handover may not change this target's conversion, if it may not. */
export function untargetedConversionChange(
  target: { kind: HandoverTargetKind; name: string },
  configs: readonly ConfigIdentity[],
): string | undefined {
  const configKind = CONFIG_KIND_OF[target.kind];
  if (configs.some((c) => c.kind === configKind && c.target === target.name)) return undefined;
  return (
    `the handover changes the conversion of a ${target.kind} only while a ${configKind} targets it, ` +
    `and none targets "${target.name}" (docs/security.md, "The handover identity")`
  );
}
