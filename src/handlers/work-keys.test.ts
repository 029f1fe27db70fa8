import { describe, expect, it } from 'vitest';
import { objectKeyLogFields } from './work-keys.ts';

describe('objectKeyLogFields', () => {
  it('names a config or an instance by the field a person follows it by across concerns', () => {
    expect(objectKeyLogFields('crdconfig/widgets')).toEqual({ config: 'widgets' });
    expect(objectKeyLogFields('xrdconfig/xwidgets')).toEqual({ config: 'xwidgets' });
    expect(objectKeyLogFields('webhookserver/s1')).toEqual({ instance: 's1' });
  });

  it('keeps any other kind under its own name, and a key that is not <kind>/<name> adds nothing', () => {
    expect(objectKeyLogFields('crd/widgets.example.com')).toEqual({ crd: 'widgets.example.com' });
    expect(objectKeyLogFields('widgets')).toEqual({});
    expect(objectKeyLogFields('crdconfig/')).toEqual({});
  });
});
