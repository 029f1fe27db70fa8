// The admission decision for the project's own CRDs: an AdmissionReview request plus the
// current objects of the other kinds in, an AdmissionResponse out. Pure: the server reads the
// cluster (cluster-read.ts) and this module decides, so every rule is table-tested here and the
// same answer comes from any replica.
//
// The rules themselves live in src/core (fleet-admission.ts, config-admission.ts) and the
// engine (compile); this module only puts the request into their terms and their verdicts into
// the AdmissionReview's. Each check compares the cluster *before* and *after* the write, so an
// edit that repairs a fleet already in violation (written while admission was down) is accepted.
//
// A config's rule errors are rejected only when its spec changes: a write that leaves the spec
// as stored (a finalizer, a label) must not wedge on a target schema that drifted since.
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { GROUP, HANDOVER_SERVICE_ACCOUNT } from '../api/constants.ts';
import {
  CRD_CONFIG_KIND,
  crdConfigSpecSchema,
  XRD_CONFIG_KIND,
  xrdConfigSpecSchema,
} from '../api/conversion-config.ts';
import { KINDS } from '../api/resources.ts';
import { WEBHOOK_SERVER_KIND } from '../api/webhook-server.ts';
import type { InstanceLike } from '../core/assignment.ts';
import { type ConfigIdentity, duplicateTargetViolation } from '../core/config-admission.ts';
import { validateConfig } from '../core/config-validation.ts';
import { violationsIntroduced } from '../core/fleet-admission.ts';
import { untargetedConversionChange } from '../core/handover-admission.ts';
import {
  allowancesOf,
  INSTANCE_POLICY_CONFIGMAP,
  type InstanceRequestLike,
  instancePolicyViolations,
  type NamespaceRead,
} from '../core/instance-admission.ts';
import type { ConversionSpec } from '../engine/compile.ts';

export const ADMISSION_REVIEW_API_VERSION = 'admission.k8s.io/v1';

const admissionRequestSchema = z.looseObject({
  uid: z.string().min(1),
  kind: z.looseObject({ group: z.string(), version: z.string(), kind: z.string() }),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  subResource: z.string().optional(),
  object: z.unknown().optional(),
  oldObject: z.unknown().optional(),
  userInfo: z.looseObject({ username: z.string().optional() }).optional(),
});
export type AdmissionRequest = z.infer<typeof admissionRequestSchema>;

const admissionReviewSchema = z.looseObject({
  apiVersion: z.literal(ADMISSION_REVIEW_API_VERSION),
  kind: z.literal('AdmissionReview'),
  request: admissionRequestSchema,
});

export interface AdmissionStatus {
  code: number;
  reason: string;
  message: string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus;
  warnings?: string[];
}

export interface AdmissionReviewOut {
  apiVersion: typeof ADMISSION_REVIEW_API_VERSION;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** A request that cannot be reviewed: its uid when it could be read, so the answer can still name it. */
export interface MalformedReview {
  uid: string | undefined;
  message: string;
}

export type ParsedReview = { ok: true; value: AdmissionRequest } | { ok: false; error: MalformedReview };

/** Reads an AdmissionReview v1 body; the only version the webhook registers for. */
export function parseReview(body: unknown): ParsedReview {
  const parsed = admissionReviewSchema.safeParse(body);
  if (parsed.success) return { ok: true, value: parsed.data.request };
  return {
    ok: false,
    error: {
      uid: readableUid(body),
      message: `not an ${ADMISSION_REVIEW_API_VERSION} AdmissionReview request: ${z.prettifyError(parsed.error)}`,
    },
  };
}

function readableUid(body: unknown): string | undefined {
  const uid = (body as { request?: { uid?: unknown } } | null)?.request?.uid;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

export function reviewOf(response: AdmissionResponse): AdmissionReviewOut {
  return { apiVersion: ADMISSION_REVIEW_API_VERSION, kind: 'AdmissionReview', response };
}

export function allow(uid: string, warnings: readonly string[] = []): AdmissionResponse {
  return warnings.length > 0 ? { uid, allowed: true, warnings: [...warnings] } : { uid, allowed: true };
}

/** A denial; the apiserver shows `status.message` to the writer, so it says what to change. */
export function deny(
  uid: string,
  status: AdmissionStatus,
  warnings: readonly string[] = [],
): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: false, status };
  return warnings.length > 0 ? { ...response, warnings: [...warnings] } : response;
}

/** The object breaks a rule: the writer must change it. */
export function invalid(message: string): AdmissionStatus {
  return { code: 422, reason: 'Invalid', message };
}

/** The writer may not make this change at all, whatever the object says. */
export function forbidden(message: string): AdmissionStatus {
  return { code: 403, reason: 'Forbidden', message };
}

/** The request itself cannot be reviewed. */
export function badRequest(message: string): AdmissionStatus {
  return { code: 400, reason: 'BadRequest', message };
}

/** The cluster could not be read: nothing is wrong with the object, the write can be retried. */
export function unavailable(message: string): AdmissionStatus {
  return { code: 503, reason: 'ServiceUnavailable', message };
}

// --- what the decision needs from the cluster

export type TargetKind = 'CustomResourceDefinition' | 'CompositeResourceDefinition';

export interface TargetRef {
  kind: TargetKind;
  name: string;
}

/** What to read before deciding: the server reads exactly this, and nothing for a request it passes. */
export interface ClusterReads {
  instances: boolean;
  /**
   * Which configs of both kinds: a review reads only those whose target has one name (a target
   * name is unique across both kinds; the handover's repoint needs its target's config), a tool
   * such as `switchyard simulate` reads them all.
   */
  configs?: 'all' | { targeting: string };
  target?: TargetRef;
  /** The namespace an instance would run in: whether it exists and has opted in. */
  namespace?: string;
  /** The namespace of the ConfigMap of what instances may ask for (an instance review reads it). */
  allowancesIn?: string;
}

/**
 * The current objects, as the apiserver returned them (raw JSON). `configs` holds the configs of
 * both kinds that target the name asked for; `target` is the live target, absent when it does
 * not exist.
 */
export interface ClusterState {
  instances: readonly unknown[];
  configs: readonly unknown[];
  target?: unknown;
  namespace?: NamespaceRead;
  /** The ConfigMap's data; absent when it does not exist (every instance write is then refused). */
  allowances?: Readonly<Record<string, string>>;
}

const NOTHING: ClusterReads = { instances: false };

type ReviewedKind = typeof WEBHOOK_SERVER_KIND | typeof CRD_CONFIG_KIND | typeof XRD_CONFIG_KIND;

/** The kind under review, or undefined for a request this webhook passes unchecked. */
function reviewedKind(request: AdmissionRequest): ReviewedKind | undefined {
  const { operation, subResource, kind } = request;
  if (operation !== 'CREATE' && operation !== 'UPDATE') return undefined;
  if (subResource || kind.group !== GROUP) return undefined;
  if (kind.kind === WEBHOOK_SERVER_KIND || kind.kind === CRD_CONFIG_KIND || kind.kind === XRD_CONFIG_KIND)
    return kind.kind;
  return undefined;
}

/** The catalog's entries of the two target kinds. */
const TARGET_RESOURCES = [KINDS.crd, KINDS.xrd];

/**
 * The target whose conversion the handover identity changes in this request, or undefined for
 * any other request (another identity, another field, a status write): the webhook's
 * matchConditions send only these, and the same test here keeps a misrouted request unchecked
 * rather than refused.
 */
function handoverTargetChange(request: AdmissionRequest, operatorNamespace: string): TargetRef | undefined {
  const { operation, subResource, kind, userInfo } = request;
  if (operation !== 'UPDATE' || subResource) return undefined;
  if (userInfo?.username !== `system:serviceaccount:${operatorNamespace}:${HANDOVER_SERVICE_ACCOUNT}`)
    return undefined;
  const target = TARGET_RESOURCES.find((r) => r.kind === kind.kind && r.group === kind.group);
  if (target === undefined || conversionUnchanged(request)) return undefined;
  const name = (request.object as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  return typeof name === 'string' ? { kind: target.kind as TargetKind, name } : undefined;
}

/** Whether spec.conversion is as stored; too deep to compare counts as changed (see specUnchanged). */
function conversionUnchanged(request: AdmissionRequest): boolean {
  const conversionOf = (o: unknown) => (specOf(o) as { conversion?: unknown } | null | undefined)?.conversion;
  try {
    return isDeepStrictEqual(conversionOf(request.object), conversionOf(request.oldObject));
  } catch {
    return false;
  }
}

/**
 * An update that leaves the spec as stored: no rule here reads anything else. The comparison
 * recurses, and the apiserver admits opaque fields nested ~10^4 levels deep, where it overflows
 * the stack (found by review.fuzz.test.ts: the server answered "could not read the cluster,
 * retry"); a spec too deep to compare counts as changed, so the rules are checked.
 */
function specUnchanged(request: AdmissionRequest): boolean {
  if (request.operation !== 'UPDATE') return false;
  try {
    return isDeepStrictEqual(specOf(request.object), specOf(request.oldObject));
  } catch {
    return false;
  }
}

function specOf(object: unknown): unknown {
  return (object as { spec?: unknown } | null | undefined)?.spec;
}

export function readsFor(request: AdmissionRequest, operatorNamespace: string): ClusterReads {
  const handoverTarget = handoverTargetChange(request, operatorNamespace);
  if (handoverTarget) return { instances: false, configs: { targeting: handoverTarget.name } };
  const kind = reviewedKind(request);
  if (kind === undefined || specUnchanged(request)) return NOTHING;
  if (kind === WEBHOOK_SERVER_KIND) {
    const candidate = instanceRequestOf(request.object);
    const namespace = candidate?.spec.namespace ?? operatorNamespace;
    const readsNamespace = namespace !== operatorNamespace;
    return {
      instances: true,
      allowancesIn: operatorNamespace,
      ...(readsNamespace && { namespace }),
    };
  }
  const identity = configIdentityOf(request.object);
  return identity
    ? { instances: true, configs: { targeting: identity.target }, target: targetRefOf(identity) }
    : { instances: true };
}

function targetRefOf(config: ConfigIdentity): TargetRef {
  const kind = config.kind === XRD_CONFIG_KIND ? 'CompositeResourceDefinition' : 'CustomResourceDefinition';
  return { kind, name: config.target };
}

// --- the decision

export function review(
  request: AdmissionRequest,
  cluster: ClusterState,
  operatorNamespace: string,
): AdmissionResponse {
  const target = handoverTargetChange(request, operatorNamespace);
  if (target) return reviewHandoverTarget(request, target, cluster);
  const kind = reviewedKind(request);
  if (kind === undefined || specUnchanged(request)) return allow(request.uid);
  if (kind === WEBHOOK_SERVER_KIND) return reviewInstance(request, cluster, operatorNamespace);
  return reviewConfig(request, kind, cluster);
}

// --- ConversionWebhookServer

const instanceLikeSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: z.looseObject({
    default: z.boolean().optional(),
    sharding: z.looseObject({ enabled: z.boolean(), weight: z.number().optional() }).optional(),
  }),
});

function instanceLikeOf(object: unknown): InstanceLike | undefined {
  const parsed = instanceLikeSchema.safeParse(object);
  return parsed.success ? parsed.data : undefined;
}

/** The stored fleet, readable instances only (the apiserver validated each against the CRD). */
function storedFleet(cluster: ClusterState): InstanceLike[] {
  return cluster.instances.flatMap((o) => instanceLikeOf(o) ?? []);
}

const instanceRequestSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: z.looseObject({
    namespace: z.string().optional(),
    image: z.looseObject({ repository: z.string().optional() }).optional(),
    serviceAccountName: z.string().optional(),
    extraArgs: z.array(z.string()).optional(),
  }),
});

function instanceRequestOf(object: unknown): InstanceRequestLike | undefined {
  const parsed = instanceRequestSchema.safeParse(object);
  return parsed.success ? { name: parsed.data.metadata.name, spec: parsed.data.spec } : undefined;
}

function reviewInstance(
  request: AdmissionRequest,
  cluster: ClusterState,
  operatorNamespace: string,
): AdmissionResponse {
  const candidate = instanceLikeOf(request.object);
  const asked = instanceRequestOf(request.object);
  if (!candidate || !asked)
    return deny(
      request.uid,
      badRequest('the ConversionWebhookServer has no readable metadata.name and spec'),
    );
  if (cluster.allowances === undefined)
    return deny(
      request.uid,
      invalid(
        `ConfigMap ${operatorNamespace}/${INSTANCE_POLICY_CONFIGMAP}, which says what instances may ask for, is missing: restore it from deploy/policies (docs/security.md); until then no instance is admitted`,
      ),
    );
  const policy = { operatorNamespace, ...allowancesOf(cluster.allowances) };
  // What the instance would run is checked on every spec change, not only what the change
  // introduces: Switchyard renders the whole spec again with its own identity.
  const refused = instancePolicyViolations(asked, policy, cluster.namespace ?? { exists: false });
  if (refused.length > 0) return deny(request.uid, invalid(refused.join('\n')));
  const name = candidate.metadata.name;
  const others = storedFleet(cluster).filter((i) => i.metadata.name !== name);
  // The stored version of this instance comes from the request, not the list: it is the one
  // the apiserver is replacing.
  const previous = instanceLikeOf(request.oldObject);
  const before = previous ? [...others, previous] : others;
  const introduced = violationsIntroduced(before, [...others, candidate]);
  if (introduced.length === 0) return allow(request.uid);
  return deny(request.uid, invalid(introduced.map((v) => v.message).join('\n')));
}

// --- CRDConversionConfig / XRDConversionConfig

const configIdentitySchema = z.looseObject({
  kind: z.enum([CRD_CONFIG_KIND, XRD_CONFIG_KIND]),
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: z.looseObject({
    targetCRD: z.looseObject({ name: z.string().min(1) }).optional(),
    targetXRD: z.looseObject({ name: z.string().min(1) }).optional(),
  }),
});

function configIdentityOf(object: unknown): ConfigIdentity | undefined {
  const parsed = configIdentitySchema.safeParse(object);
  if (!parsed.success) return undefined;
  const { kind, metadata, spec } = parsed.data;
  const target = kind === CRD_CONFIG_KIND ? spec.targetCRD?.name : spec.targetXRD?.name;
  return target === undefined ? undefined : { kind, name: metadata.name, target };
}

function reviewConfig(
  request: AdmissionRequest,
  kind: typeof CRD_CONFIG_KIND | typeof XRD_CONFIG_KIND,
  cluster: ClusterState,
): AdmissionResponse {
  const specSchema = kind === CRD_CONFIG_KIND ? crdConfigSpecSchema : xrdConfigSpecSchema;
  const parsed = specSchema.safeParse(specOf(request.object));
  if (!parsed.success) return deny(request.uid, invalid(specIssues(parsed.error).join('\n')));
  const identity = configIdentityOf(request.object);
  if (!identity) return deny(request.uid, badRequest(`the ${kind} has no readable kind and metadata.name`));
  const others = cluster.configs.flatMap((o) => configIdentityOf(o) ?? []);
  const duplicate = duplicateTargetViolation(identity, others, configIdentityOf(request.oldObject)?.target);
  const target = targetRefOf(identity);
  const compiled = compileAgainstTarget(parsed.data, target, cluster.target);
  const warnings = [...pinWarnings(parsed.data.webhookServerRef?.name, cluster), ...compiled.warnings];
  const problems = [...(duplicate ? [duplicate.message] : []), ...compiled.errors];
  if (problems.length === 0) return allow(request.uid, warnings);
  return deny(request.uid, invalid(problems.join('\n')), warnings);
}

// --- a target's conversion, changed by the handover

function reviewHandoverTarget(
  request: AdmissionRequest,
  target: TargetRef,
  cluster: ClusterState,
): AdmissionResponse {
  const configs = cluster.configs.flatMap((o) => configIdentityOf(o) ?? []);
  const violation = untargetedConversionChange(target, configs);
  return violation === undefined ? allow(request.uid) : deny(request.uid, forbidden(violation));
}

/** zod's issues as `spec.<path>: <message>` lines: the path a user finds in their YAML. */
function specIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${fieldPath(['spec', ...issue.path])}: ${issue.message}`);
}

function fieldPath(segments: readonly PropertyKey[]): string {
  return segments
    .map((s, i) => (typeof s === 'number' ? `[${s}]` : `${i === 0 ? '' : '.'}${String(s)}`))
    .join('');
}

interface CompileVerdict {
  errors: string[];
  warnings: string[];
}

/**
 * The engine's verdict against the live target. A target that does not exist yet is not an
 * error (configs are often applied before, or with, what they convert): the config status
 * compiles it when the target appears.
 */
function compileAgainstTarget(spec: ConversionSpec, target: TargetRef, live: unknown): CompileVerdict {
  const validation = validateConfig(spec, { kind: target.kind, name: target.name, live });
  switch (validation.verdict) {
    case 'TargetMissing':
      return {
        errors: [],
        warnings: [
          `${target.kind} "${target.name}" does not exist yet: the rules are compiled against its schema when it is created (see the config's status)`,
        ],
      };
    case 'Invalid':
      return { errors: validation.errors, warnings: validation.warnings };
    case 'Compiled':
      return { errors: [], warnings: validation.warnings };
  }
}

/** A pin to an instance that does not exist is admitted (it may be created next) but said out loud. */
function pinWarnings(pinnedTo: string | undefined, cluster: ClusterState): string[] {
  if (pinnedTo === undefined) return [];
  if (storedFleet(cluster).some((i) => i.metadata.name === pinnedTo)) return [];
  return [
    `spec.webhookServerRef names ConversionWebhookServer "${pinnedTo}", which does not exist: the config is served by no instance until it is created. Create it, or correct the name`,
  ];
}
