import { JetStreamApiError } from '@nats-io/jetstream';
import { jserrors } from '@nats-io/jetstream/internal';
import {
  ClosedConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { ViewBehindError } from '../view-lag.ts';
import { ConflictError, classifyFailure, PermanentError } from './errors.ts';

const apiError = (code: number, status = 400) =>
  new JetStreamApiError({ code: status, err_code: code, description: 'whatever the text says' });

describe('classifyFailure', () => {
  it('recognises Kubernetes conflicts by class and by 409 status', () => {
    expect(classifyFailure(new ConflictError('x'))).toBe('conflict');
    expect(classifyFailure(Object.assign(new Error('HTTP-Code: 409'), { code: 409 }))).toBe('conflict');
  });

  it('treats permanent errors as non-retryable and everything else as retryable', () => {
    expect(classifyFailure(new PermanentError('bad ref'))).toBe('permanent');
    expect(classifyFailure(Object.assign(new Error('x'), { code: 500 }))).toBe('transient');
    expect(classifyFailure('boom')).toBe('transient');
    expect(classifyFailure(Object.assign(new Error('econnreset'), { code: 'ECONNRESET' }))).toBe('transient');
  });

  it('treats a failing bus as infrastructure, by class or API code (never by message text)', () => {
    expect(classifyFailure(apiError(10059, 404)), 'stream not found').toBe('infrastructure');
    expect(classifyFailure(apiError(10076, 503)), 'JetStream not enabled').toBe('infrastructure');
    expect(classifyFailure(apiError(10039, 503)), 'not enabled for the account').toBe('infrastructure');
    expect(
      classifyFailure(apiError(10158, 409)),
      'the same message id still being stored by a clustered leader',
    ).toBe('infrastructure');
    expect(classifyFailure(new jserrors.JetStreamNotEnabled('x'))).toBe('infrastructure');
    expect(classifyFailure(new TimeoutError())).toBe('infrastructure');
    expect(classifyFailure(new ClosedConnectionError())).toBe('infrastructure');
    expect(classifyFailure(new RequestError('x', { cause: new NoRespondersError('s') })), 'via cause').toBe(
      'infrastructure',
    );
    const behind = new ViewBehindError('the view did not become current within 10000 ms', {
      state: 'unknown',
      behindBy: undefined,
      confirmedAgoMs: 12_000,
      reason: 'the bus did not answer',
    });
    expect(classifyFailure(behind), 'a view behind the bus is never the message’s fault').toBe(
      'infrastructure',
    );
    expect(classifyFailure(apiError(10071)), 'wrong last sequence is not infrastructure').toBe('transient');
    expect(classifyFailure(new Error('stream not found')), 'text alone classifies nothing').toBe('transient');
  });
});
