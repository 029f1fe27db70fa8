// Where an operator's command finds the bus when no --nats.* flag says: from the cluster its
// kubeconfig reaches, as the workers find it. The NATS address is the one the workers run with
// (the router Deployment's SWITCHYARD_NATS_URL), the password is the command's own user's key of
// the credentials Secret, and the CA is the one the workers mount: so `switchyard explain
// <target>` needs nothing but a kubeconfig allowed to read those two objects. An address only
// the cluster resolves (a Service name, `clusterServiceOf`) is reached through a port-forward to
// that Service (operator-bus.ts).
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig, type V1Container, type V1Volume } from '@kubernetes/client-node';
import { NATS_CREDENTIALS_SECRET } from '../access/nats-credentials-secret.ts';
import { type ClusterFlags, DEFAULT_NAMESPACE } from './args.ts';

/** A worker every overlay of deploy/ runs, with the NATS address and CA every worker has. */
const WORKER_DEPLOYMENT = 'switchyard-router';

/** The namespace the flags name, else the one deploy/ installs into. */
export function namespaceOf(flags: ClusterFlags): string {
  return flags.namespace ?? DEFAULT_NAMESPACE;
}

/**
 * The kubeconfig at hand, as kubectl finds it: the flag, else KUBECONFIG, else ~/.kube/config.
 * None of them: undefined (client-node would fall back to localhost:8080, which is not a cluster
 * the person named).
 */
export function kubeConfigOf(flags: ClusterFlags, env = process.env): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
  else if (env.KUBECONFIG || (env.HOME && existsSync(join(env.HOME, '.kube', 'config'))))
    kc.loadFromDefault();
  else return undefined;
  if (flags.context) kc.setCurrentContext(flags.context);
  return kc;
}

export interface ClusterBus {
  url: string;
  user: string;
  passwordFile: string;
  caFile?: string;
  /** Removes the files written for the connection. */
  cleanup(): void;
}

function envValue(container: V1Container, name: string): string | undefined {
  return container.env?.find((e) => e.name === name)?.value;
}

/** The Secret and key mounted at the directory `file` is in, if a Secret volume is mounted there. */
function secretKeyOf(file: string, container: V1Container, volumes: readonly V1Volume[]) {
  const mount = container.volumeMounts?.find((m) => file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  const secret = volumes.find((v) => v.name === mount?.name)?.secret;
  if (!mount || !secret?.secretName) return undefined;
  const name = file.slice(mount.mountPath.replace(/\/$/, '').length + 1);
  const key = secret.items?.find((item) => item.path === name)?.key ?? name;
  return { secretName: secret.secretName, key };
}

/** The bus as the workers of the flags' namespace reach it, as NATS user `user`. */
export async function busFromCluster(kc: KubeConfig, flags: ClusterFlags, user: string): Promise<ClusterBus> {
  const namespace = namespaceOf(flags);
  const where = `${namespace}/${WORKER_DEPLOYMENT}`;
  const deployment = await kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: WORKER_DEPLOYMENT, namespace })
    .catch((err: unknown) => {
      throw new Error(`reading the Deployment ${where} for the bus address: ${(err as Error).message}`);
    });
  const pod = deployment.spec?.template.spec;
  const container = pod?.containers[0];
  const url = container && envValue(container, 'SWITCHYARD_NATS_URL');
  if (!container || !url) throw new Error(`the Deployment ${where} names no SWITCHYARD_NATS_URL`);
  const core = kc.makeApiClient(CoreV1Api);
  const readKey = async (secretName: string, key: string) => {
    const secret = await core.readNamespacedSecret({ name: secretName, namespace }).catch((err: unknown) => {
      throw new Error(`reading the Secret ${namespace}/${secretName}: ${(err as Error).message}`);
    });
    const value = secret.data?.[key];
    if (value === undefined) throw new Error(`the Secret ${namespace}/${secretName} has no key ${key}`);
    return Buffer.from(value, 'base64');
  };
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bus-'));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, await readKey(NATS_CREDENTIALS_SECRET, user), { mode: 0o600 });
    const caPath = envValue(container, 'SWITCHYARD_NATS_TLS_CA_FILE');
    const ca = caPath ? secretKeyOf(caPath, container, pod?.volumes ?? []) : undefined;
    if (caPath && !ca) throw new Error(`the Deployment ${where} mounts its NATS CA from no Secret`);
    let caFile: string | undefined;
    if (ca) {
      caFile = join(dir, 'ca.crt');
      writeFileSync(caFile, await readKey(ca.secretName, ca.key), { mode: 0o600 });
    }
    return { url, user, passwordFile, ...(caFile !== undefined && { caFile }), cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** A NATS server addressed by a Service's cluster DNS name. */
export interface ClusterService {
  /** `nats` or `tls`, as the address says it. */
  scheme: string;
  /** The name as the address spells it: what the server's certificate names. */
  host: string;
  service: string;
  namespace: string;
  port: number;
}

const SERVICE_HOST =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.svc(\.cluster\.local)?$/;

/**
 * The Service behind the address when only the cluster resolves it: every server of the list is
 * `<service>.<namespace>.svc[.cluster.local]`, and the first one is the Service (a port-forward
 * reaches one server, and a client needs no more). Undefined when a server resolves elsewhere.
 */
export function clusterServiceOf(url: string): ClusterService | undefined {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((server) => {
      const withScheme = /^\w+:\/\//.test(server) ? server : `nats://${server}`;
      try {
        return new URL(withScheme);
      } catch {
        return undefined;
      }
    });
  const services = servers.map((u) => {
    const match = u && SERVICE_HOST.exec(u.hostname);
    if (!u || !match) return undefined;
    return {
      scheme: u.protocol.replace(/:$/, ''),
      host: u.hostname,
      service: match[1] as string,
      namespace: match[3] as string,
      port: u.port === '' ? 4222 : Number(u.port),
    };
  });
  if (services.length === 0 || services.some((s) => s === undefined)) return undefined;
  return services[0];
}
