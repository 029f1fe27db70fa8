import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeToken,
  objectSubject,
  objectSubjectKind,
  parseObjectSubject,
  recheckSubject,
  unescapeToken,
} from './subjects.ts';

describe('subject tokens', () => {
  it('escape a CRD name into one readable token', () => {
    expect(escapeToken('widgets.example.com')).toBe('widgets_2eexample_2ecom');
    expect(objectSubject({ kind: 'crd', namespace: '', name: 'widgets.example.com' })).toBe(
      'k8s.crd._.widgets_2eexample_2ecom',
    );
  });

  it('round-trip any string, and never produce a separator or wildcard', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        const token = escapeToken(s);
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(unescapeToken(token)).toBe(s);
      }),
    );
  });

  it('round-trip ASCII names (the fast path), and refuse a malformed escape on either path', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii' }), (s) => {
        expect(unescapeToken(escapeToken(s))).toBe(s);
      }),
    );
    for (const bad of ['a_zz', 'a_2', 'a_', 'a_2eb_c3_x', 'a_c3_'])
      expect(() => unescapeToken(bad), bad).toThrow(/malformed/);
    expect(unescapeToken('caf_c3_a9')).toBe('café');
  });

  it('parse the key back from an object subject', () => {
    const key = { kind: 'lease', namespace: 'cws-a', name: 'switchyard-served-pod.1' };
    expect(parseObjectSubject(objectSubject(key))).toEqual(key);
    expect(parseObjectSubject('work.assign.3.x')).toBeUndefined();
    expect(parseObjectSubject('k8s.lease.a_zz.b')).toBeUndefined();
  });

  it('read the kind of any object subject as parsing it whole does, without unescaping', () => {
    const token = fc.constantFrom('crdconfig', 'lease', 'webhookserver');
    fc.assert(
      fc.property(
        token,
        fc.string({ unit: 'grapheme' }),
        fc.string({ unit: 'grapheme' }),
        (kind, ns, name) => {
          const subject = objectSubject({ kind, namespace: ns, name });
          expect(objectSubjectKind(subject)).toBe(parseObjectSubject(subject)?.kind);
        },
      ),
    );
    expect(objectSubjectKind('k8s')).toBeUndefined();
    expect(objectSubjectKind('k8s.lease')).toBeUndefined();
  });
});

describe('recheckSubject', () => {
  it('maps a work subject to its one schedule subject in the same stream', () => {
    expect(recheckSubject('work.handover.3.widgets_2eexample_2ecom')).toBe(
      'recheck.handover.3.widgets_2eexample_2ecom',
    );
  });

  it('refuses a subject outside WORK: the schedule could not target it', () => {
    expect(() => recheckSubject('fanout.assign.x')).toThrow(/only work/);
  });
});
