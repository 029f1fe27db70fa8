import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml, type V1Container } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { renderInstance } from '../core/instances/render.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { SWITCHYARD_NODE_OPTIONS } from './constants.ts';
import { webhookServerSchema } from './webhook-server.ts';

/** Every container of the project's image in deploy/, with the file it is in. */
function projectContainers(): { file: string; container: V1Container }[] {
  const files = readdirSync(join(PROJECT_ROOT, 'deploy'), { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.yaml'),
  );
  const found: { file: string; container: V1Container }[] = [];
  const visit = (file: string, value: unknown): void => {
    if (Array.isArray(value)) for (const v of value) visit(file, v);
    else if (typeof value === 'object' && value !== null) {
      const image = (value as { image?: unknown }).image;
      if (typeof image === 'string' && image.startsWith('switchyard:'))
        found.push({ file, container: value as V1Container });
      else for (const v of Object.values(value)) visit(file, v);
    }
  };
  for (const file of files)
    visit(file, loadAllYaml(readFileSync(join(PROJECT_ROOT, 'deploy', file), 'utf8')));
  return found;
}

const nodeOptionsOf = (container: V1Container) =>
  container.env?.filter((e) => e.name === 'NODE_OPTIONS') ?? [];

describe('every Switchyard process runs with the project’s NODE_OPTIONS', () => {
  it('in each container of deploy/ that runs the project’s image, once', () => {
    const containers = projectContainers();
    expect(containers.length).toBeGreaterThanOrEqual(12);
    for (const { file, container } of containers)
      expect(nodeOptionsOf(container), `${file}: ${container.name}`).toEqual([
        { name: 'NODE_OPTIONS', value: SWITCHYARD_NODE_OPTIONS },
      ]);
  });

  it('in the webhook-server Deployments the instances handler renders, unless its settings name their own', () => {
    const instance = webhookServerSchema.parse({
      apiVersion: 'switchyard.dev/v1alpha1',
      kind: 'ConversionWebhookServer',
      metadata: { name: 'blue', uid: 'uid-1', generation: 1 },
      spec: {},
    });
    const settings = {
      defaultNamespace: 'switchyard-system',
      image: { repository: 'switchyard', tag: 'dev' },
      handoverServiceAccount: { name: 'switchyard-handover', namespace: 'switchyard-system' },
    };
    const containerOf = (env: Record<string, string>) => {
      const rendered = renderInstance(instance, { ...settings, env });
      if (!rendered.ok) throw new Error(rendered.error);
      return rendered.value.deployment.spec?.template.spec?.containers[0] as V1Container;
    };
    expect(nodeOptionsOf(containerOf({}))).toEqual([
      { name: 'NODE_OPTIONS', value: SWITCHYARD_NODE_OPTIONS },
    ]);
    expect(nodeOptionsOf(containerOf({ NODE_OPTIONS: '--max-old-space-size=512' }))).toEqual([
      { name: 'NODE_OPTIONS', value: '--max-old-space-size=512' },
    ]);
  });
});
