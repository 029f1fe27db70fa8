// Reads a target's versions from the live object. CRDs and Crossplane XRDs describe versions
// alike; the one difference that matters here is how they name the version objects are stored
// at (`storage` on a CRD, `referenceable` on an XRD), so one function serves both kinds.
import type { TargetVersion } from './compile.ts';
import { isJsonObject } from './json.ts';
import type { TargetSchema } from './schema.ts';

/** The target's versions; an absent or malformed `spec.versions` reads as no versions. */
export function targetVersions(target: unknown): TargetVersion[] {
  const spec = isJsonObject(target) && isJsonObject(target.spec) ? target.spec : {};
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  return versions.filter(isJsonObject).flatMap((v): TargetVersion[] => {
    if (typeof v.name !== 'string') return [];
    const schema =
      isJsonObject(v.schema) && isJsonObject(v.schema.openAPIV3Schema) ? v.schema.openAPIV3Schema : undefined;
    return [
      {
        name: v.name,
        served: v.served === true,
        storage: v.storage === true || v.referenceable === true,
        schema: schema as TargetSchema | undefined,
      },
    ];
  });
}
