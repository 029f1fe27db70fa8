// The admission webhook's own serving certificate, kept by the admission process itself with
// the project's issuer, as the instances handler keeps each instance's (docs/instances.md,
// "Serving certificates"): the same decision (core/instances/serving-cert.ts), the same
// sequence over two Secrets (handlers/instances/certificates.ts), so renewal points, CA overlap
// and key checks are written once. What differs is who trusts the CA: not conversion targets,
// but the webhooks of the ValidatingWebhookConfiguration `switchyard-admission`, whose caBundle
// this process patches (ca-bundle.ts decides the patch).
//
// One pass, level-triggered, any number of replicas at once: read the configuration, ensure
// the CA Secret (never mounted) and the serving Secret, publish the bundle if a webhook holds
// another, and hand back the pair to serve. Every write is conditional, so two replicas racing
// never both win: a Secret that was missing is created with a POST (409 if the other replica
// created it first), one that existed is applied at the version read (409 if it changed), and
// the configuration is patched at the version read. A 409 re-reads and decides again over what
// the other replica wrote. A CA rotation keeps the old CA in the bundle until it expires, and
// the serving certificate moves to the new CA only once every webhook's caBundle holds it (and
// 10 minutes after), so each replica, whichever pair it serves, is trusted throughout.
//
// The server serves the pair this pass read, not a mounted file: the process reads the Secret
// anyway (it decides over it), a new pair is served at the next pass instead of after the
// kubelet's sync (up to a minute), and the Pod does not wait on a Secret volume that this very
// process has to create first. With `admission.issueCertificate` off (cert-manager issues the
// Secret and injects the caBundle) a pass only reads the serving Secret.
import { createSecureContext } from 'node:tls';
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type CertificateIssuer, type KeyPair, tlsSecretOf } from '../core/instances/serving-cert.ts';
import { ensureCertificates } from '../handlers/instances/certificates.ts';
import { secretReader } from '../handlers/instances/secrets.ts';
import type { WritesClient } from '../kube/clients.ts';
import { ignoreNotFound, isConflict } from '../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';
import { fieldManagerFor, KubeWriter, objectPath } from '../kube/writer.ts';
import { systemClock } from '../runtime/clock.ts';
import type { CertificatePair } from '../runtime/serving-certificate.ts';
import {
  caBundlePatch,
  publishedBundles,
  WEBHOOK_CONFIGURATION,
  type WebhookConfiguration,
} from './ca-bundle.ts';

/** deploy/admission/deployment.yaml's Service: the name the apiserver dials is `<service>.<ns>.svc`. */
export const ADMISSION_SERVICE = 'switchyard-admission';
/** The CA's certificate and key: read and written by the admission process only, never mounted. */
export const CA_SECRET = 'switchyard-admission-ca';
/** The serving certificate, its key, and the trust bundle (ca.crt) the webhooks publish. */
export const SERVING_SECRET = 'switchyard-admission-tls';

const FIELD_MANAGER = fieldManagerFor('admission');

/** A few replicas at most race on the same objects: each 409 means another one made progress. */
const MAX_CONFLICTS = 3;

const WEBHOOK_CONFIGURATIONS = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  resource: 'validatingwebhookconfigurations',
  namespaced: false,
} as const;

export interface OwnCertificateOptions {
  writes: WritesClient;
  /** The process's own namespace: the Secrets and the Service live there. */
  namespace: string;
  /** False: another issuer writes the serving Secret and the caBundle; a pass only reads it. */
  issue: boolean;
  issuer: CertificateIssuer;
}

export interface CertificatePass {
  /** The pair to serve; undefined while no valid one exists. */
  pair: CertificatePair | undefined;
  /** False while the webhook configuration does not exist yet (its caBundle is still to publish). */
  published: boolean;
  /** This pass wrote the caBundle. */
  patched: boolean;
}

/** One pass over the Secrets and the webhook configuration. */
export function certificatePass(
  options: OwnCertificateOptions,
): (signal: AbortSignal) => Promise<CertificatePass> {
  const read = secretReader(options.writes);
  if (!options.issue)
    return async (signal) => {
      const secret = await read(options.namespace, SERVING_SECRET, signal);
      const pair = servable(
        secret && { certPem: secret.data['tls.crt'] ?? '', keyPem: secret.data['tls.key'] ?? '' },
      );
      return { pair, published: true, patched: false };
    };
  const deps = { secrets: read, writer: createOrApply(options.writes), issuer: options.issuer };
  return async (signal) => {
    for (let conflicts = 0; ; conflicts++) {
      try {
        const config = await readConfiguration(options.writes, signal);
        const ensured = await ensureCertificates(deps, {
          instance: ADMISSION_SERVICE,
          caCommonName: `${ADMISSION_SERVICE} CA`,
          namespace: options.namespace,
          service: ADMISSION_SERVICE,
          caSecret: secretShape(CA_SECRET, options.namespace),
          servingSecret: secretShape(SERVING_SECRET, options.namespace),
          publishedBundles: publishedBundles(config),
          nowMs: systemClock.now(),
          signal,
        });
        const patch = config && ensured.bundlePem !== undefined && caBundlePatch(config, ensured.bundlePem);
        if (patch) await patchConfiguration(options.writes, patch, signal);
        return { pair: servable(ensured.serving), published: config !== undefined, patched: Boolean(patch) };
      } catch (err) {
        if (!isConflict(err) || conflicts >= MAX_CONFLICTS) throw err;
      }
    }
  };
}

export interface CertificateKeeperOptions {
  pass: (signal: AbortSignal) => Promise<CertificatePass>;
  /** Called with each new pair after the first. */
  apply: (pair: CertificatePair) => void;
  log: Logger;
  intervalMs: number;
  /** After a failed pass, or one that has nothing to serve or nowhere to publish yet. */
  retryMs: number;
}

/** Runs passes until stopped: `first` resolves with the first valid pair, later ones go to `apply`. */
export class CertificateKeeper {
  readonly first: Promise<CertificatePair>;
  private resolveFirst!: (pair: CertificatePair) => void;
  private current: CertificatePair | undefined;
  private readonly options: CertificateKeeperOptions;

  constructor(options: CertificateKeeperOptions) {
    this.options = options;
    this.first = new Promise((resolve) => {
      this.resolveFirst = resolve;
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const { log, intervalMs, retryMs } = this.options;
    while (!signal.aborted) {
      let waitMs = intervalMs;
      try {
        const { pair, published, patched } = await this.options.pass(signal);
        if (patched)
          log.info(`published the CA bundle of Secret ${SERVING_SECRET} to ${WEBHOOK_CONFIGURATION}`);
        if (!published)
          log.warn(
            `no ValidatingWebhookConfiguration ${WEBHOOK_CONFIGURATION} to publish the CA bundle to yet`,
          );
        if (pair === undefined) log.warn(`no valid serving certificate in Secret ${SERVING_SECRET} yet`);
        else this.serve(pair);
        if (pair === undefined || !published) waitMs = retryMs;
      } catch (err) {
        if (signal.aborted) return;
        log.warn({ err }, 'could not check the serving certificate; retrying');
        waitMs = retryMs;
      }
      await systemClock.sleep(waitMs, signal);
    }
  }

  private serve(pair: CertificatePair): void {
    if (this.current === undefined) this.resolveFirst(pair);
    else if (pair.cert !== this.current.cert || pair.key !== this.current.key) {
      this.options.apply(pair);
      this.options.log.info(`serving the new certificate from Secret ${SERVING_SECRET}`);
    }
    this.current = pair;
  }
}

/** The pair as the server takes it, if it forms a TLS context (a key that matches its certificate). */
function servable(pair: KeyPair | undefined): CertificatePair | undefined {
  if (pair === undefined) return undefined;
  try {
    createSecureContext({ cert: pair.certPem, key: pair.keyPem });
    return { cert: pair.certPem, key: pair.keyPem };
  } catch {
    return undefined;
  }
}

function secretShape(name: string, namespace: string): V1Secret {
  return tlsSecretOf({
    name,
    namespace,
    labels: { 'app.kubernetes.io/part-of': 'switchyard', 'app.kubernetes.io/component': 'admission' },
  });
}

/**
 * The sequence's writer, made race-safe for replicas that run it at once: a Secret read as
 * missing is created (a POST answers 409 when another replica created it meanwhile; a
 * server-side apply would silently replace the key material the other one just wrote), one
 * read at a version is applied at that version.
 */
function createOrApply(writes: WritesClient): Pick<KubeWriter, 'apply'> {
  const applier = new KubeWriter(writes, FIELD_MANAGER);
  return {
    apply: (ref, obj, opts = {}) => {
      if (opts.resourceVersion !== undefined) return applier.apply(ref, obj, opts);
      const item = objectPath(ref, { namespace: obj.metadata?.namespace ?? '', name: 'x' });
      const url = apiUrl(writes.kubeConfig, item.slice(0, item.lastIndexOf('/'))); // the collection
      url.searchParams.set('fieldManager', FIELD_MANAGER);
      return sendForJson(writes.kubeConfig, HttpMethod.POST, url, {
        body: obj,
        contentType: 'application/json',
        ...(opts.signal && { signal: opts.signal }),
      });
    },
  };
}

async function readConfiguration(writes: WritesClient, signal: AbortSignal) {
  const url = apiUrl(writes.kubeConfig, objectPath(WEBHOOK_CONFIGURATIONS, { name: WEBHOOK_CONFIGURATION }));
  return ignoreNotFound(
    sendForJson<WebhookConfiguration>(writes.kubeConfig, HttpMethod.GET, url, { signal }),
  );
}

async function patchConfiguration(writes: WritesClient, patch: unknown, signal: AbortSignal) {
  const url = apiUrl(writes.kubeConfig, objectPath(WEBHOOK_CONFIGURATIONS, { name: WEBHOOK_CONFIGURATION }));
  url.searchParams.set('fieldManager', FIELD_MANAGER);
  await sendForJson(writes.kubeConfig, HttpMethod.PATCH, url, {
    body: patch,
    contentType: 'application/json-patch+json',
    signal,
  });
}
