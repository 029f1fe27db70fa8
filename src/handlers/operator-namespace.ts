import { DEFAULT_OPERATOR_NAMESPACE, HANDOVER_SERVICE_ACCOUNT } from '../api/constants.ts';

/**
 * Where instances without spec.namespace run: the namespace this process runs in (its
 * Deployment sets it from the downward API), as the instances handler renders them.
 */
const NAMESPACE_ENV = 'SWITCHYARD_NAMESPACE';

export function operatorNamespace(): string {
  return process.env[NAMESPACE_ENV] || DEFAULT_OPERATOR_NAMESPACE;
}

/**
 * The handover handler's ServiceAccount, which runs in the same namespace as this process: the
 * instances handler binds it, per instance, to `get` on the instance's serving Secret and
 * nothing else (core/instances/render.ts).
 */
export function handoverServiceAccount(): { name: string; namespace: string } {
  return { name: HANDOVER_SERVICE_ACCOUNT, namespace: operatorNamespace() };
}
