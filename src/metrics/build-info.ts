// Which release a process runs: `switchyard_build_info{version, nodejs} 1`, served by every worker
// and webhook-server replica beside its process metrics. Joined by pod to any other series, it
// tells which Pods run which release while an upgrade rolls.
import { Gauge, type Registry } from 'prom-client';
import { projectVersion } from '../runtime/version.ts';

export function registerBuildInfo(registry: Registry): void {
  new Gauge({
    name: 'switchyard_build_info',
    help: 'Always 1; its labels say which Switchyard release and which Node.js this process runs.',
    labelNames: ['version', 'nodejs'] as const,
    registers: [registry],
  }).set({ version: projectVersion(), nodejs: process.version }, 1);
}
