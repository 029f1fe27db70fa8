import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  ApiStatusError,
  ignoreNotFound,
  isConflict,
  isGone,
  isNamespaceNotFound,
  isNotFound,
  isServerError,
  isTooManyRequests,
  statusOf,
} from './errors.ts';

describe('statusOf', () => {
  it('reads the status of every shape client-node throws', () => {
    expect(statusOf(new ApiException(409, 'conflict', {}, {})), 'generated API clients').toBe(409);
    expect(statusOf(Object.assign(new Error('Gone'), { statusCode: 410 })), 'Watch').toBe(410);
    expect(statusOf({ code: 410, reason: 'Expired' }), 'a watch ERROR event (metav1.Status)').toBe(410);
  });

  it('finds no status in network errors, NATS API codes or non-errors', () => {
    expect(statusOf(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(statusOf(Object.assign(new Error('wrong last sequence'), { code: 10071 }))).toBeUndefined();
    expect(statusOf('boom')).toBeUndefined();
    expect(statusOf(null)).toBeUndefined();
  });
});

describe('predicates', () => {
  it('each names one status', () => {
    const of = (code: number) => new ApiException(code, '', {}, {});
    expect([isNotFound(of(404)), isConflict(of(409)), isGone(of(410)), isTooManyRequests(of(429))]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(isConflict(of(404))).toBe(false);
    expect([isServerError(of(503)), isServerError(of(429)), isServerError(new Error('x'))]).toEqual([
      true,
      false,
      false,
    ]);
  });

  it('tells a missing namespace from a missing object', () => {
    expect(
      isNamespaceNotFound(new ApiStatusError(404, 'namespaces "x" not found', 'NotFound', 'namespaces')),
    ).toBe(true);
    expect(isNamespaceNotFound(new ApiStatusError(404, 'secrets "x" not found', 'NotFound', 'secrets'))).toBe(
      false,
    );
    expect(isNamespaceNotFound(new ApiStatusError(409, 'conflict', 'Conflict', 'namespaces'))).toBe(false);
  });

  it('ignoreNotFound turns a 404 into undefined and rethrows anything else', async () => {
    await expect(ignoreNotFound(Promise.reject(new ApiException(404, '', {}, {})))).resolves.toBeUndefined();
    await expect(ignoreNotFound(Promise.resolve(1))).resolves.toBe(1);
    await expect(ignoreNotFound(Promise.reject(new ApiException(409, '', {}, {})))).rejects.toThrow();
  });
});
