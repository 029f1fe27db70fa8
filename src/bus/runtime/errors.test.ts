import { describe, expect, it } from 'vitest';
import { ConflictError, classifyFailure, PermanentError } from './errors.ts';

describe('classifyFailure', () => {
  it('recognises Kubernetes conflicts by class and by 409 status', () => {
    expect(classifyFailure(new ConflictError('x'))).toBe('conflict');
    expect(classifyFailure(Object.assign(new Error('HTTP-Code: 409'), { code: 409 }))).toBe('conflict');
    expect(classifyFailure({ response: { statusCode: 409 } })).toBe('conflict');
  });

  it('treats permanent errors as non-retryable and everything else as retryable', () => {
    expect(classifyFailure(new PermanentError('bad ref'))).toBe('permanent');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 500 }))).toBe('retry');
    expect(classifyFailure('boom')).toBe('retry');
    expect(classifyFailure(Object.assign(new Error('econnreset'), { code: 'ECONNRESET' }))).toBe('retry');
  });
});
