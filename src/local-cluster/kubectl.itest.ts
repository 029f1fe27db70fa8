// The kubectl built with the control plane works against the local cluster:
// one version on both sides, reads, server-side writes from stdin, and RBAC
// as the caller's identity.
import { existsSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, useLocalCluster } from '../../test/support/local-cluster.ts';
import { kubectlPath } from './cluster.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
let namespace = '';

beforeAll(async () => {
  namespace = await createNamespace(admin, 'kubectl');
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace });
});

function configMap(greeting: string): string {
  return [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: hello',
    `  namespace: ${namespace}`,
    'data:',
    `  greeting: ${greeting}`,
    '',
  ].join('\n');
}

describe('kubectl built with the control plane', () => {
  it('is in SWITCHYARD_BIN_DIR and reports v1.37.2 for itself and the server', async () => {
    expect(existsSync(kubectlPath())).toBe(true);
    const res = await cluster.kubectl(['version', '-o', 'json']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const version = JSON.parse(res.stdout) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(version.clientVersion.gitVersion).toBe('v1.37.2');
    expect(version.serverVersion.gitVersion).toBe('v1.37.2');
  });

  it('lists namespaces as admin', async () => {
    const res = await cluster.kubectl(['get', 'namespaces', '-o', 'name']);
    expect(res.code).toBe(0);
    expect(res.stdout.trim().split('\n')).toEqual(
      expect.arrayContaining(['namespace/default', 'namespace/kube-system', `namespace/${namespace}`]),
    );
  });

  it('applies a ConfigMap from stdin, then updates it', async () => {
    const created = await cluster.kubectl(['apply', '-f', '-'], { input: configMap('hello') });
    expect(created).toMatchObject({ code: 0, stdout: 'configmap/hello created\n' });
    const read = await core.readNamespacedConfigMap({ name: 'hello', namespace });
    expect(read.data).toEqual({ greeting: 'hello' });

    const updated = await cluster.kubectl(['apply', '-f', '-'], { input: configMap('again') });
    expect(updated).toMatchObject({ code: 0, stdout: 'configmap/hello configured\n' });
    const got = await cluster.kubectl([
      'get',
      'configmap',
      'hello',
      '-n',
      namespace,
      '-o',
      'jsonpath={.data.greeting}',
    ]);
    expect(got).toMatchObject({ code: 0, stdout: 'again' });
  });

  it('is denied as nobody, with the reason', async () => {
    const res = await cluster.kubectl(['get', 'namespaces'], { identity: 'nobody' });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(
      'namespaces is forbidden: User "switchyard:nobody" cannot list resource "namespaces"',
    );
  });
});
