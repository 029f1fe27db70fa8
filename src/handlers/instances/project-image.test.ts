import { describe, expect, it } from 'vitest';
import { parseImage } from './project-image.ts';

describe('parseImage', () => {
  it('splits repository, tag and digest', () => {
    expect(parseImage('switchyard:dev')).toEqual({ repository: 'switchyard', tag: 'dev' });
    expect(parseImage('reg.local:5000/x/switchyard')).toEqual({ repository: 'reg.local:5000/x/switchyard' });
    expect(parseImage('reg.local:5000/switchyard:1.2@sha256:ab')).toEqual({
      repository: 'reg.local:5000/switchyard',
      tag: '1.2',
      digest: 'sha256:ab',
    });
  });
});
