import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import {
  isConsumerAlreadyExists,
  isConsumerNotFound,
  isJetStreamUnavailable,
  isStreamNotFound,
  isWrongLastSequence,
  jetStreamApiCode,
} from './errors.ts';

const apiError = (err_code: number, code = 400, description = 'x') =>
  new JetStreamApiError({ err_code, code, description });

describe('JetStream API errors', () => {
  it('are told apart by code', () => {
    expect(isStreamNotFound(apiError(10059, 404))).toBe(true);
    expect(isConsumerNotFound(apiError(10014, 404))).toBe(true);
    expect(isConsumerAlreadyExists(apiError(10148))).toBe(true);
    expect(isWrongLastSequence(apiError(10071))).toBe(true);
    expect(isJetStreamUnavailable(apiError(10076, 503))).toBe(true);
    expect(isJetStreamUnavailable(apiError(10039, 503))).toBe(true);
    expect(isStreamNotFound(apiError(10014, 404))).toBe(false);
  });

  it('never by message text', () => {
    expect(isStreamNotFound(new Error('stream not found'))).toBe(false);
    expect(isConsumerNotFound(new Error('consumer not found'))).toBe(false);
    expect(jetStreamApiCode(Object.assign(new Error('x'), { code: 10059 }))).toBeUndefined();
  });
});
