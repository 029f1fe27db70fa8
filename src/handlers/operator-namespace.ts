/**
 * Where instances without spec.namespace run: the namespace this process runs in (its
 * Deployment sets it from the downward API), as the instances handler renders them.
 */
const NAMESPACE_ENV = 'SWITCHYARD_NAMESPACE';
const DEFAULT_NAMESPACE = 'switchyard-system';

export function operatorNamespace(): string {
  return process.env[NAMESPACE_ENV] || DEFAULT_NAMESPACE;
}
