// The webhook-server's ConversionReview layer: a request body in, the ConversionReview to answer
// with out. Pure, like src/admission/review.ts: the server reads the body and finds the
// target's plan, this module decides, so every answer is unit-tested and the same on any replica.
//
// It never throws and never crashes the process, whatever arrives. The apiserver is not the only
// client that can reach the port, and a conversion webhook that dies takes every read of the
// target with it. So:
//
// * Depth is measured on the parsed value, by a recursion that stops one level past the limit,
//   before anything else walks it. V8's JSON.parse is iterative and accepts any depth, but
//   JSON.stringify (the answer) recurses and throws RangeError past a few thousand levels.
// * A body whose uid can be read is answered with a Failure review for that uid, so kubectl shows
//   the reason; only a body with no readable uid gets a plain 400 (as admission does).
// * Each object's conversion runs inside try/catch: an engine bug or a RangeError fails the
//   review with the object's name instead of escaping.
//
// The review fails as a whole when any object fails: the apiserver accepts all objects converted
// or none. The message names the first object that failed (`kind namespace/name`), the versions
// and the reason, and how many others failed too, because it is what the user reads in kubectl.
import { z } from 'zod';
import { webhookPath } from '../api/constants.ts';
import { convertOwned, describeObject, formatConversionError, splitApiVersion } from '../engine/convert.ts';
import { isJsonObject } from '../engine/json.ts';
import type { PlanLookup } from './plans.ts';

export const CONVERSION_REVIEW_V1 = 'apiextensions.k8s.io/v1';
/** Sent instead of v1 only when a target lists v1beta1 first in `conversionReviewVersions`. */
export const CONVERSION_REVIEW_V1BETA1 = 'apiextensions.k8s.io/v1beta1';
export type ConversionReviewVersion = typeof CONVERSION_REVIEW_V1 | typeof CONVERSION_REVIEW_V1BETA1;
const REVIEW_VERSIONS: readonly string[] = [CONVERSION_REVIEW_V1, CONVERSION_REVIEW_V1BETA1];

export interface ReviewLimits {
  /** Deepest nesting of arrays and objects in the whole review (the review itself is level 1). */
  maxDepth: number;
  /** Most objects one review may carry. */
  maxObjects: number;
}

export const DEFAULT_REVIEW_LIMITS: ReviewLimits = {
  // Measured on Node 24 with the default stack: JSON.stringify throws RangeError past ~4,450
  // levels. 1,000 keeps a 4× margin for the server's frames beneath (the depth check itself
  // recurses at most this deep), while real objects nest a few dozen levels at most (the review
  // adds 3 above each object: review, request, objects).
  maxDepth: 1_000,
  // The apiserver converts a whole list response in one review, so this must stay above the
  // largest unpaginated list of one kind; it bounds the work of a review of tiny objects, which
  // the server's byte limit alone does not.
  maxObjects: 100_000,
};

export interface ConversionRequest {
  uid: string;
  desiredAPIVersion: string;
  objects: unknown[];
}

export interface ConversionReview {
  apiVersion: ConversionReviewVersion;
  kind: 'ConversionReview';
  request: ConversionRequest;
}

export type ConversionResponse =
  | { uid: string; result: { status: 'Success' }; convertedObjects: unknown[] }
  | { uid: string; result: { status: 'Failure'; message: string } };

export interface ConversionReviewOut {
  apiVersion: ConversionReviewVersion;
  kind: 'ConversionReview';
  response: ConversionResponse;
}

/**
 * A body that is not a review to convert. With a readable uid the server answers HTTP 200 with
 * `answer`, a Failure for that uid (the apiserver shows its message); without one, HTTP
 * `status` with `message` as text.
 */
export type MalformedConversionReview =
  | { uid: undefined; status: 400; message: string }
  | { uid: string; message: string; answer: ConversionReviewOut };

export type ParsedConversionReview =
  | { ok: true; value: ConversionReview }
  | { ok: false; error: MalformedConversionReview };

const conversionRequestSchema = z.looseObject({
  uid: z.string().min(1),
  desiredAPIVersion: z.string().min(1),
  objects: z.array(z.unknown()),
});

export const conversionReviewSchema = z.looseObject({
  apiVersion: z.enum([CONVERSION_REVIEW_V1, CONVERSION_REVIEW_V1BETA1]),
  kind: z.literal('ConversionReview'),
  request: conversionRequestSchema,
});

// --- reading the request

/** Reads a ConversionReview body (v1 or v1beta1). Never throws. */
export function parseConversionReview(
  body: string | Buffer,
  limits: ReviewLimits = DEFAULT_REVIEW_LIMITS,
): ParsedConversionReview {
  try {
    return parseText(typeof body === 'string' ? body : body.toString('utf8'), limits);
  } catch (err) {
    // Nothing above is expected to throw; if it does, the body is still only a bad request.
    return {
      ok: false,
      error: { uid: undefined, status: 400, message: `unreadable request: ${errorText(err)}` },
    };
  }
}

function parseText(text: string, limits: ReviewLimits): ParsedConversionReview {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return {
      ok: false,
      error: { uid: undefined, status: 400, message: `request body is not JSON: ${errorText(err)}` },
    };
  }
  // JSON.parse does not recurse, so any depth parses; nothing recursive touches the value
  // until this check passes.
  if (valueNesting(value, limits.maxDepth) > limits.maxDepth)
    return malformed(
      value,
      `the ConversionReview nests more than ${limits.maxDepth} levels deep, the most this server converts`,
    );
  let review: z.infer<typeof conversionReviewSchema>;
  if (isConversionReview(value)) review = value;
  else {
    const parsed = conversionReviewSchema.safeParse(value);
    if (!parsed.success)
      return malformed(
        value,
        `not an ${CONVERSION_REVIEW_V1} (or v1beta1) ConversionReview request: ${z.prettifyError(parsed.error)}`,
      );
    review = parsed.data;
  }
  const { apiVersion, request } = review;
  if (request.objects.length > limits.maxObjects)
    return malformed(
      value,
      `the ConversionReview carries ${request.objects.length} objects, more than the ${limits.maxObjects} this server converts in one review`,
    );
  return {
    ok: true,
    value: {
      apiVersion,
      kind: 'ConversionReview',
      request: { uid: request.uid, desiredAPIVersion: request.desiredAPIVersion, objects: request.objects },
    },
  };
}

/**
 * What `conversionReviewSchema` accepts, checked by hand on the path of every review (the
 * property tests hold the two to the same answer). Zod reads only the bodies this refuses, for
 * the message that says what is wrong with them.
 */
export function isConversionReview(value: unknown): value is z.infer<typeof conversionReviewSchema> {
  if (!isJsonObject(value) || !isJsonObject(value.request)) return false;
  const { apiVersion, kind, request } = value;
  return (
    (apiVersion === CONVERSION_REVIEW_V1 || apiVersion === CONVERSION_REVIEW_V1BETA1) &&
    kind === 'ConversionReview' &&
    typeof request.uid === 'string' &&
    request.uid.length > 0 &&
    typeof request.desiredAPIVersion === 'string' &&
    request.desiredAPIVersion.length > 0 &&
    Array.isArray(request.objects)
  );
}

function malformed(value: unknown, message: string): ParsedConversionReview {
  const uid = readableUid(value);
  if (uid === undefined) return { ok: false, error: { uid, status: 400, message } };
  return { ok: false, error: { uid, message, answer: failureReview(answerVersion(value), uid, message) } };
}

function readableUid(value: unknown): string | undefined {
  const request = isJsonObject(value) ? value.request : undefined;
  const uid = isJsonObject(request) ? request.uid : undefined;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

/** The request's apiVersion when it is one we answer in, else v1. */
function answerVersion(value: unknown): ConversionReviewVersion {
  const apiVersion = isJsonObject(value) ? value.apiVersion : undefined;
  return typeof apiVersion === 'string' && REVIEW_VERSIONS.includes(apiVersion)
    ? (apiVersion as ConversionReviewVersion)
    : CONVERSION_REVIEW_V1;
}

/**
 * The nesting of a parsed JSON value (a scalar is 0, `{}` is 1), counted up to `limit + 1`: a
 * deeper value is not followed further, so a hostile depth costs at most `limit` stack frames
 * (JSON.parse itself does not recurse). On the path of every review, hence plain recursion and
 * for-in: an explicit stack with Object.values took five times as long.
 */
export function valueNesting(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  return containerNesting(value, 1, limit);
}

function containerNesting(container: object, depth: number, limit: number): number {
  if (depth > limit) return depth;
  let deepest = depth;
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) {
      const child: unknown = container[i];
      if (typeof child === 'object' && child !== null) {
        const nested = containerNesting(child, depth + 1, limit);
        if (nested > deepest) deepest = nested;
      }
    }
    return deepest;
  }
  for (const key in container) {
    const child: unknown = (container as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null) {
      const nested = containerNesting(child, depth + 1, limit);
      if (nested > deepest) deepest = nested;
    }
  }
  return deepest;
}

// --- answering

export function successReview(
  apiVersion: ConversionReviewVersion,
  uid: string,
  convertedObjects: unknown[],
): ConversionReviewOut {
  return {
    apiVersion,
    kind: 'ConversionReview',
    response: { uid, result: { status: 'Success' }, convertedObjects },
  };
}

/** A review that converts nothing; the apiserver shows `message` to the user. */
export function failureReview(
  apiVersion: ConversionReviewVersion,
  uid: string,
  message: string,
): ConversionReviewOut {
  return { apiVersion, kind: 'ConversionReview', response: { uid, result: { status: 'Failure', message } } };
}

/**
 * Converts every object of the review to its desiredAPIVersion with the target's plan. Success
 * only when every object converted; otherwise a Failure naming the first that did not. Never
 * throws.
 */
export function answerConversionReview(
  review: ConversionReview,
  target: string,
  plan: PlanLookup,
): ConversionReviewOut {
  const { apiVersion } = review;
  const { uid } = review.request;
  try {
    const answer = convertAll(review.request, target, plan);
    return answer.ok
      ? successReview(apiVersion, uid, answer.value)
      : failureReview(apiVersion, uid, answer.error);
  } catch (err) {
    return failureReview(apiVersion, uid, `converting for ${target} failed unexpectedly: ${errorText(err)}`);
  }
}

type Converted = { ok: true; value: unknown[] } | { ok: false; error: string };

function convertAll(request: ConversionRequest, target: string, plan: PlanLookup): Converted {
  if (plan.kind === 'none')
    return { ok: false, error: `this replica holds no conversion plan for ${target}: ${plan.why}` };
  const desired = splitApiVersion(request.desiredAPIVersion);
  if (desired?.group !== plan.group)
    return {
      ok: false,
      error: `desiredAPIVersion ${request.desiredAPIVersion} is not a version of ${plan.group}, the group ${webhookPath(target)} converts`,
    };
  const { objects } = request;
  const converted: unknown[] = new Array(objects.length);
  let firstFailure: string | undefined;
  let failures = 0;
  for (let i = 0; i < objects.length; i++) {
    const one = convertOne(plan, target, objects[i], i, desired.version);
    if (one.ok) converted[i] = one.value;
    else {
      failures++;
      firstFailure ??= one.error;
    }
  }
  if (firstFailure === undefined) return { ok: true, value: converted };
  const others = failures - 1;
  return {
    ok: false,
    error:
      others === 0
        ? firstFailure
        : `${firstFailure} (and ${others} more of the ${objects.length} objects failed to convert)`,
  };
}

type ConvertedOne = { ok: true; value: unknown } | { ok: false; error: string };

function convertOne(
  plan: Extract<PlanLookup, { kind: 'plan' }>,
  target: string,
  object: unknown,
  index: number,
  to: string,
): ConvertedOne {
  if (!isJsonObject(object))
    return { ok: false, error: `converting objects[${index}] to ${to}: it is not a JSON object` };
  const who = () => describeObject(object);
  const { apiVersion } = object;
  if (typeof apiVersion !== 'string')
    return { ok: false, error: `converting ${who()} to ${to}: apiVersion is missing or not a string` };
  const from = splitApiVersion(apiVersion);
  if (from === undefined)
    return {
      ok: false,
      error: `converting ${who()} to ${to}: apiVersion ${apiVersion} is not <group>/<version>`,
    };
  if (from.group !== plan.group)
    return {
      ok: false,
      error: `converting ${who()} from ${apiVersion} to ${to}: ${from.group} is not the group ${webhookPath(target)} converts (${plan.group})`,
    };
  try {
    // The review's objects were parsed for this request alone: the answer may share their
    // values rather than copy them (engine/convert.ts). Nothing here mutates them.
    const result = convertOwned(plan.router, object, from.version, to);
    return result.ok
      ? { ok: true, value: result.object }
      : { ok: false, error: formatConversionError(result.error, from.version, to) };
  } catch (err) {
    return {
      ok: false,
      error: `converting ${who()} from ${from.version} to ${to}: the conversion failed unexpectedly (${errorText(err)})`,
    };
  }
}

function errorText(err: unknown): string {
  try {
    return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  } catch {
    return 'an error that cannot be printed';
  }
}
