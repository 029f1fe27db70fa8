// The serving-certificate sequence of docs/instances.md, over the two Secrets: decide
// (core/instances/serving-cert.ts), act on the first thing the decision asks for, decide again
// over the result, until it asks for nothing; then the decision's re-check time. Level-
// triggered: a crash between two writes leaves Secrets the next run decides over the same way.
import type { V1Secret } from '@kubernetes/client-node';
import {
  type CertificateFacts,
  readCa,
  readCertificates,
  readLeaf,
} from '../../core/instances/certificate-facts.ts';
import {
  bundlePem,
  type CertificateDecision,
  type CertificateIssuer,
  caValidity,
  decideCertificates,
  type KeyPair,
  type LeafPurpose,
  leafValidity,
  servingPurpose,
} from '../../core/instances/serving-cert.ts';
import type { KubeWriter } from '../../kube/writer.ts';
import { type SecretRead, type SecretReader, writeSecret } from './secrets.ts';

export interface CertificateDeps {
  secrets: SecretReader;
  writer: Pick<KubeWriter, 'apply'>;
  issuer: CertificateIssuer;
}

export interface CertificateRequest {
  instance: string;
  /** The CA's common name; `<instance> webhook-server CA` by default. */
  caCommonName?: string;
  namespace: string;
  service: string;
  /** What the leaf is for; `<service>.<namespace>.svc`, serving TLS only, by default. */
  purpose?: LeafPurpose;
  caSecret: V1Secret;
  servingSecret: V1Secret;
  /** For each target naming the instance's Service: the fingerprints in its published caBundle. */
  publishedBundles: readonly (readonly string[])[];
  nowMs: number;
  signal: AbortSignal;
}

/** What the Secrets hold (or will, once written): the CA, the leaf, and the trust to carry. */
interface CertState {
  ca: KeyPair | undefined;
  leaf: KeyPair | undefined;
  bundle: CertificateFacts[];
  /** The serving Secret's ca.crt as last read or written. */
  writtenBundle: string | undefined;
  caRead: SecretRead | undefined;
  servingRead: SecretRead | undefined;
}

/** CA, leaf, then the bundle: at most one of each per run. */
const MAX_ROUNDS = 4;

export interface CertificatesEnsured {
  /** When time alone changes the decision (epoch ms). */
  recheckAtMs: number | undefined;
  /** The serving Secret's `ca.crt` (PEM) as it stands now: what targets must trust. */
  bundlePem: string | undefined;
  /** The serving Secret's certificate and key as they stand now. */
  serving: KeyPair | undefined;
}

/** Ensures both Secrets. */
export async function ensureCertificates(
  deps: CertificateDeps,
  req: CertificateRequest,
): Promise<CertificatesEnsured> {
  const state = await readState(deps, req);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const decision = decide(state, req);
    if (!(await actOn(decision, state, deps, req)))
      return { recheckAtMs: decision.recheckAtMs, bundlePem: state.writtenBundle, serving: state.leaf };
  }
  throw new Error(`certificates of ${req.instance} did not settle in ${MAX_ROUNDS} rounds`);
}

async function readState(deps: CertificateDeps, req: CertificateRequest): Promise<CertState> {
  const caRead = await deps.secrets(req.namespace, nameOf(req.caSecret), req.signal);
  const servingRead = await deps.secrets(req.namespace, nameOf(req.servingSecret), req.signal);
  const writtenBundle = servingRead?.data['ca.crt'];
  return {
    ca: keyPairOf(caRead),
    leaf: keyPairOf(servingRead),
    bundle: (writtenBundle && readCertificates(writtenBundle)) || [],
    writtenBundle,
    caRead,
    servingRead,
  };
}

function decide(state: CertState, req: CertificateRequest): CertificateDecision {
  const ca = readCa(state.ca?.certPem, state.ca?.keyPem);
  const cas = [...(ca ? [ca.cert] : []), ...state.bundle];
  return decideCertificates({
    purpose: purposeOf(req),
    ca,
    bundle: state.bundle,
    leaf: readLeaf(state.leaf?.certPem, state.leaf?.keyPem, cas),
    publishedBundles: req.publishedBundles,
    nowMs: req.nowMs,
  });
}

/** Performs the first write the decision asks for; false when it asks for none. */
async function actOn(
  decision: CertificateDecision,
  state: CertState,
  deps: CertificateDeps,
  req: CertificateRequest,
): Promise<boolean> {
  if (decision.ca.action === 'create') {
    state.ca = await deps.issuer.createCa({
      commonName: req.caCommonName ?? `${req.instance} webhook-server CA`,
      ...caValidity(req.nowMs),
    });
    state.bundle = decision.bundle;
    const data = { 'tls.crt': state.ca.certPem, 'tls.key': state.ca.keyPem };
    state.caRead = versionOf(await writeSecret(deps.writer, req.caSecret, data, state.caRead, req.signal));
    return true;
  }
  const ca = readCa(state.ca?.certPem, state.ca?.keyPem);
  const pem = bundlePem(decision.bundle);
  if (decision.leaf?.action === 'issue' && state.ca && ca) {
    state.leaf = await deps.issuer.issueServing({
      ca: state.ca,
      ...purposeOf(req),
      ...leafValidity(ca.cert, req.nowMs),
    });
  } else if (pem === state.writtenBundle || state.leaf === undefined) {
    return false;
  }
  state.bundle = decision.bundle;
  state.writtenBundle = pem;
  const data = { 'tls.crt': state.leaf.certPem, 'tls.key': state.leaf.keyPem, 'ca.crt': pem };
  state.servingRead = versionOf(
    await writeSecret(deps.writer, req.servingSecret, data, state.servingRead, req.signal),
  );
  return true;
}

function purposeOf(req: CertificateRequest): LeafPurpose {
  return req.purpose ?? servingPurpose(req.service, req.namespace);
}

function keyPairOf(read: SecretRead | undefined): KeyPair | undefined {
  const certPem = read?.data['tls.crt'];
  const keyPem = read?.data['tls.key'];
  return certPem && keyPem ? { certPem, keyPem } : undefined;
}

/** A written Secret's version: the next write in this run is conditional on it. */
function versionOf(written: V1Secret): SecretRead {
  return { data: {}, resourceVersion: written.metadata?.resourceVersion };
}

function nameOf(secret: V1Secret): string {
  return secret.metadata?.name ?? '';
}
