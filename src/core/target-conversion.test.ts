import { describe, expect, it } from 'vitest';
import { keptCaBundleOf } from './target-conversion.ts';

const target = (clientConfig: object | undefined, strategy = 'Webhook') => ({
  spec: { conversion: { strategy, ...(clientConfig && { webhook: { clientConfig } }) } },
});
const service = (name: string, namespace = 'tenant') => ({ name, namespace, path: '/convert/x', port: 443 });

describe('keptCaBundleOf', () => {
  it('keeps the bundle a target publishes for the instance’s Service', () => {
    expect(
      keptCaBundleOf(target({ service: service('a-webhook-server'), caBundle: 'QQ==' }), 'a', 'tenant'),
    ).toBe('QQ==');
  });

  it.each([
    [
      'a move (another instance’s Service)',
      target({ service: service('b-webhook-server'), caBundle: 'QQ==' }),
    ],
    [
      'the Service in another namespace',
      target({ service: service('a-webhook-server', 'other'), caBundle: 'QQ==' }),
    ],
    ['no bundle published', target({ service: service('a-webhook-server') })],
    ['an empty bundle', target({ service: service('a-webhook-server'), caBundle: '' })],
    ['a URL webhook', target({ url: 'https://x', caBundle: 'QQ==' })],
    ['strategy None', target(undefined, 'None')],
    ['no object', undefined],
  ])('reads it instead for %s', (_, live) => {
    expect(keptCaBundleOf(live, 'a', 'tenant')).toBeUndefined();
  });
});
