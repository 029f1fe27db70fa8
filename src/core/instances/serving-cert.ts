// When an instance's serving certificate and its CA are (re)issued, and which CA certificates
// its targets must trust. Pure: facts in (certificate-facts.ts), decisions out; the issuer
// (src/tls/x509-issuer.ts) makes the certificates and the handler writes the Secrets.
//
// Two Secrets, both owned by the instance: the CA (certificate and key, read only by the
// instances handler, never mounted: a replica that could mint certificates could impersonate
// any instance sharing the CA) and the serving Secret the replicas mount (tls.crt, tls.key,
// and ca.crt, the trust bundle the handover handler publishes as each target's caBundle).
//
// Rotation policy, and why:
//   * The leaf lives 1 year and is renewed once 2/3 of its life has passed (about 4 months
//     before expiry, cert-manager's default proportion). Renewing a leaf changes nothing that
//     targets hold (same CA), so it is cheap; the long margin means the control plane can be
//     down for months before a certificate expires. Also renewed at once when it is missing,
//     unreadable, does not match its key, or when its DNS names or usages differ from what it is
//     issued for (`LeafPurpose`): `<service>.<namespace>.svc`, the name the apiserver dials, after
//     a namespace change; or a certificate issued before its purpose grew (deploy's NATS
//     certificate gained the route names and clientAuth), renewed by the next run.
//   * The CA lives 10 years and is replaced once 4/5 of its life has passed (2 years before
//     expiry). Replacing it rewrites every target's caBundle, so it is rare; it is also
//     replaced at once when missing, unreadable or not matching its key.
//   * Overlap, so no conversion fails across a CA change: the new CA is added to the bundle in
//     front of the old one (still valid old CAs stay until they expire), and the leaf moves to
//     the new CA only once every target that names the instance publishes a bundle holding it.
//     Until then the old leaf keeps serving: clients trust both. And not before the new CA has
//     been in the bundle for `trustOverlapMs` (10 minutes), counted from its creation: a target
//     moving to the instance while the CA changes does not name the instance yet, so the check
//     above cannot count it, and its patch may carry the bundle read before the change. Once it
//     lands, the instances handler sees a target that does not trust the new CA and wakes the
//     handover to read the bundle again, well within the overlap.
//   * notBefore is backdated 5 minutes so an apiserver whose clock lags a little accepts a
//     fresh certificate; a leaf never outlives its CA.
import type { V1ObjectMeta, V1Secret } from '@kubernetes/client-node';
import type { CertificateFacts, ExtendedKeyUsage } from './certificate-facts.ts';

export interface CertificatePolicy {
  caValidityMs: number;
  /** Fraction of the CA's life after which it is replaced. */
  caRenewAt: number;
  leafValidityMs: number;
  /** Fraction of the leaf's life after which it is renewed. */
  leafRenewAt: number;
  backdateMs: number;
  /** How long a new CA is in the bundle, at least, before the leaf moves to it. */
  trustOverlapMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export const DEFAULT_CERTIFICATE_POLICY: Readonly<CertificatePolicy> = Object.freeze({
  caValidityMs: 3650 * DAY_MS,
  caRenewAt: 4 / 5,
  leafValidityMs: 365 * DAY_MS,
  leafRenewAt: 2 / 3,
  backdateMs: 5 * 60 * 1000,
  trustOverlapMs: 10 * 60 * 1000,
});

/** The CA as read from its Secret; undefined when the Secret is missing or unreadable. */
export interface CaState {
  cert: CertificateFacts;
  keyMatches: boolean;
}

/** The serving certificate as read from its Secret. */
export interface LeafState {
  cert: CertificateFacts;
  keyMatches: boolean;
  /** Fingerprint of the CA (among the current one and the bundle) that signed it, if any. */
  issuerFingerprint: string | undefined;
}

/** What a leaf is issued for; one whose names or usages say otherwise is renewed. */
export interface LeafPurpose {
  /** Exactly these DNS names, the first also its common name. */
  dnsNames: readonly string[];
  /** Exactly these usages. */
  extendedKeyUsages: readonly ExtendedKeyUsage[];
}

export interface CertificateInput {
  purpose: LeafPurpose;
  ca: CaState | undefined;
  /** The trust bundle last written (the serving Secret's ca.crt), as facts. */
  bundle: readonly CertificateFacts[];
  leaf: LeafState | undefined;
  /** For each target naming the instance's Service: the fingerprints in its published caBundle. */
  publishedBundles: readonly (readonly string[])[];
  nowMs: number;
  policy?: Readonly<CertificatePolicy>;
}

export type CaReason = 'Missing' | 'KeyMismatch' | 'Expiring';
export type LeafReason =
  | 'Missing'
  | 'KeyMismatch'
  | 'Expired'
  | 'NamesChanged'
  | 'UsagesChanged'
  | 'Expiring'
  | 'UntrustedIssuer'
  | 'NewCaTrusted';

export type CaAction = { action: 'keep' } | { action: 'create'; reason: CaReason };
export type LeafAction =
  | { action: 'keep' }
  /** Signed by the previous CA, which targets still need: keep it until they trust the new one. */
  | { action: 'wait'; reason: 'NewCaNotYetTrusted' }
  | { action: 'issue'; reason: LeafReason };

export interface CertificateDecision {
  /** Act on this first; after creating a CA, decide again with it before touching the leaf. */
  ca: CaAction;
  /** Undefined while the CA must be created first: a leaf is only issued by a usable CA. */
  leaf: LeafAction | undefined;
  /** The trust bundle to write as ca.crt: the current CA first, then older CAs still valid. */
  bundle: CertificateFacts[];
  /** When time alone changes a decision (epoch ms): a renewal point or an old CA's expiry. */
  recheckAtMs: number | undefined;
}

export function decideCertificates(input: CertificateInput): CertificateDecision {
  const policy = input.policy ?? DEFAULT_CERTIFICATE_POLICY;
  const ca = decideCa(input.ca, input.nowMs, policy);
  const current = input.ca?.cert;
  if (ca.action === 'create' || current === undefined) {
    return { ca, leaf: undefined, bundle: carriedTrust(input), recheckAtMs: undefined };
  }
  const bundle = trustBundle(current, input.bundle, input.nowMs);
  const leaf = decideLeaf(input, current, bundle, policy);
  return { ca, leaf, bundle, recheckAtMs: recheckAt(input, current, bundle, policy) };
}

/**
 * What a new CA's bundle must keep: the CA it replaces (its leaf still serves until targets
 * trust the new one) and older CAs, while they are valid. Decide again with this as `bundle`.
 */
function carriedTrust(input: CertificateInput): CertificateFacts[] {
  const replaced = input.ca === undefined ? [] : [input.ca.cert];
  return [...replaced, ...input.bundle].filter(
    (c, i, all) => c.notAfterMs > input.nowMs && all.findIndex((o) => o.fingerprint === c.fingerprint) === i,
  );
}

function decideCa(ca: CaState | undefined, nowMs: number, policy: Readonly<CertificatePolicy>): CaAction {
  if (ca === undefined) return { action: 'create', reason: 'Missing' };
  if (!ca.keyMatches || !ca.cert.isCa) return { action: 'create', reason: 'KeyMismatch' };
  if (nowMs >= renewalPoint(ca.cert, policy.caRenewAt)) return { action: 'create', reason: 'Expiring' };
  return { action: 'keep' };
}

function decideLeaf(
  input: CertificateInput,
  ca: CertificateFacts,
  bundle: readonly CertificateFacts[],
  policy: Readonly<CertificatePolicy>,
): LeafAction {
  const leaf = input.leaf;
  if (leaf === undefined) return { action: 'issue', reason: 'Missing' };
  if (!leaf.keyMatches) return { action: 'issue', reason: 'KeyMismatch' };
  if (input.nowMs >= leaf.cert.notAfterMs) return { action: 'issue', reason: 'Expired' };
  if (!sameSet(leaf.cert.dnsNames, input.purpose.dnsNames))
    return { action: 'issue', reason: 'NamesChanged' };
  if (!sameSet(leaf.cert.extendedKeyUsages, input.purpose.extendedKeyUsages))
    return { action: 'issue', reason: 'UsagesChanged' };
  if (leaf.issuerFingerprint !== ca.fingerprint) {
    if (!bundle.some((c) => c.fingerprint === leaf.issuerFingerprint))
      return { action: 'issue', reason: 'UntrustedIssuer' };
    // Even a leaf past its renewal point waits (it is still valid): one from the new CA would
    // fail every conversion of a target that does not trust that CA yet.
    if (!trustedEverywhere(ca.fingerprint, input.publishedBundles) || input.nowMs < trustedFrom(ca, policy))
      return { action: 'wait', reason: 'NewCaNotYetTrusted' };
    return { action: 'issue', reason: 'NewCaTrusted' };
  }
  if (input.nowMs >= renewalPoint(leaf.cert, policy.leafRenewAt))
    return { action: 'issue', reason: 'Expiring' };
  return { action: 'keep' };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((x) => right.has(x));
}

function trustedEverywhere(fingerprint: string, published: readonly (readonly string[])[]): boolean {
  return published.every((bundle) => bundle.includes(fingerprint));
}

/** Bounded by construction: a CA is replaced at most once per 8 years, and expired ones drop out. */
export function trustBundle(
  current: CertificateFacts,
  previous: readonly CertificateFacts[],
  nowMs: number,
): CertificateFacts[] {
  const older = previous.filter((c) => c.fingerprint !== current.fingerprint && c.notAfterMs > nowMs);
  const unique = older.filter((c, i) => older.findIndex((o) => o.fingerprint === c.fingerprint) === i);
  return [current, ...unique.sort((a, b) => b.notAfterMs - a.notAfterMs)];
}

/** The bundle as ca.crt text. */
export function bundlePem(bundle: readonly CertificateFacts[]): string {
  return bundle.map((c) => c.pem).join('');
}

/** When the leaf may move to `ca`: its creation (notBefore is backdated) plus the overlap. */
function trustedFrom(ca: CertificateFacts, policy: Readonly<CertificatePolicy>): number {
  return ca.notBeforeMs + policy.backdateMs + policy.trustOverlapMs;
}

function renewalPoint(cert: CertificateFacts, fraction: number): number {
  return cert.notBeforeMs + Math.floor((cert.notAfterMs - cert.notBeforeMs) * fraction);
}

function recheckAt(
  input: CertificateInput,
  ca: CertificateFacts,
  bundle: readonly CertificateFacts[],
  policy: Readonly<CertificatePolicy>,
): number | undefined {
  const points = [renewalPoint(ca, policy.caRenewAt), ...bundle.slice(1).map((c) => c.notAfterMs)];
  if (input.leaf !== undefined) points.push(renewalPoint(input.leaf.cert, policy.leafRenewAt));
  if (input.leaf !== undefined && input.leaf.issuerFingerprint !== ca.fingerprint)
    points.push(trustedFrom(ca, policy));
  const future = points.filter((t) => t > input.nowMs);
  return future.length === 0 ? undefined : Math.min(...future);
}

/** The validity of a CA created at `nowMs`. */
export function caValidity(nowMs: number, policy: Readonly<CertificatePolicy> = DEFAULT_CERTIFICATE_POLICY) {
  return { notBeforeMs: nowMs - policy.backdateMs, notAfterMs: nowMs + policy.caValidityMs };
}

/** The validity of a leaf issued at `nowMs` by `ca`: never beyond the CA's own. */
export function leafValidity(
  ca: CertificateFacts,
  nowMs: number,
  policy: Readonly<CertificatePolicy> = DEFAULT_CERTIFICATE_POLICY,
) {
  return {
    notBeforeMs: nowMs - policy.backdateMs,
    notAfterMs: Math.min(nowMs + policy.leafValidityMs, ca.notAfterMs),
  };
}

/** The DNS names a serving certificate is issued for. */
export function servingDnsNames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`];
}

/** An instance's (or the admission webhook's) leaf: its Service's name, serving TLS only. */
export function servingPurpose(service: string, namespace: string): LeafPurpose {
  return { dnsNames: servingDnsNames(service, namespace), extendedKeyUsages: ['serverAuth'] };
}

/** A certificate with its private key, both PEM (the key PKCS#8). */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

/** Makes certificates; the decisions above say when and with which validity. */
export interface CertificateIssuer {
  createCa(request: { commonName: string; notBeforeMs: number; notAfterMs: number }): Promise<KeyPair>;
  issueServing(request: {
    ca: KeyPair;
    dnsNames: readonly string[];
    /** IP addresses the certificate also serves (the local stack's NATS on 127.0.0.1); none by default. */
    ipAddresses?: readonly string[];
    /** `serverAuth` alone by default; a NATS server's routes need `clientAuth` too. */
    extendedKeyUsages?: readonly ExtendedKeyUsage[];
    notBeforeMs: number;
    notAfterMs: number;
  }): Promise<KeyPair>;
}

/** A Secret of type kubernetes.io/tls with this metadata: every certificate Switchyard issues lives in one. */
export function tlsSecretOf(metadata: V1ObjectMeta): V1Secret {
  return { apiVersion: 'v1', kind: 'Secret', metadata, type: 'kubernetes.io/tls' };
}
