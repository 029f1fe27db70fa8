import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { describeReadError, fieldEquals } from './cluster-read.ts';

const status = { kind: 'Status', message: 'storage is (re)initializing', code: 429 };

describe('describeReadError', () => {
  it('tells the writer the apiserver’s status and message, not the raw exception', () => {
    const asText = new ApiException(429, 'Unknown API Status Code!', JSON.stringify(status), {});
    const parsed = new ApiException(403, 'Forbidden', { ...status, code: 403, message: 'forbidden' }, {});
    expect(describeReadError(asText)).toBe('the apiserver answered 429: storage is (re)initializing');
    expect(describeReadError(parsed)).toBe('the apiserver answered 403: forbidden');
    expect(describeReadError(new ApiException(500, 'x', 'not json', {}))).toBe('the apiserver answered 500');
  });

  it('passes a network error’s own message on', () => {
    expect(describeReadError(new Error('connect ECONNREFUSED 10.0.0.1:443'))).toBe(
      'connect ECONNREFUSED 10.0.0.1:443',
    );
  });
});

describe('fieldEquals', () => {
  it('selects a plain name as it is', () => {
    expect(fieldEquals('spec.targetCRD.name', 'widgets.example.org')).toBe(
      'spec.targetCRD.name=widgets.example.org',
    );
  });

  it('escapes what would end the value or start another requirement', () => {
    expect(fieldEquals('spec.targetCRD.name', 'a,metadata.name=b\\')).toBe(
      'spec.targetCRD.name=a\\,metadata.name\\=b\\\\',
    );
  });
});
