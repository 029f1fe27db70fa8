// Go's regexp on JavaScript's engine: the expected matches and refusals are what Go 1.26's
// regexp.Compile and FindStringSubmatch give for the same pattern and text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileGoRegexp } from './go-regexp.ts';

// [pattern, text, the named groups' captures (null: no match; 'error': Go refuses the pattern)]
const GO_CASES: [string, string, string[] | null | 'error'][] = [
  ['(?P<m>\\d+)', 'ab12c', ['12']],
  ['^(?P<v>\\d+)(?P<u>[A-Za-z]+)$', '50Gi', ['50', 'Gi']],
  ['^(?P<v>\\d+)(?P<u>[A-Za-z]+)$', '50 Gi', null],
  ['(?P<m>a|ab)', 'ab', ['a']],
  ['(?:a|ab)(?P<r>c|bcd)', 'abcd', ['bcd']],
  ['(?P<m>a*?)', 'aaa', ['']],
  ['(?P<m>(?U)a*)', 'aaa', ['']],
  ['(?P<m>(?U)a*?)', 'aaa', ['aaa']],
  ['(?P<m>.)', '\n', null],
  ['(?P<m>(?s).)', '\n', ['\n']],
  ['(?P<m>.)', '\ud83d\ude00', ['\ud83d\ude00']],
  ['(?P<m>^b)', 'a\nb', null],
  ['(?P<m>(?m)^b)', 'a\nb', ['b']],
  ['(?P<m>a$)', 'a\n', null],
  ['(?P<m>(?m)a$)', 'a\nb', ['a']],
  ['(?P<m>\\Aa)', 'ba', null],
  ['(?P<m>a\\z)', 'ab', null],
  ['(?P<m>\\s+)', 'a\u000b\t b', ['\t ']],
  ['(?P<m>\\w+)', 'h\u00e9llo', ['h']],
  ['(?P<m>(?i)k)', '\u212a', ['\u212a']],
  ['(?P<m>(?i)[^k])', '\u212a', null],
  ['(?P<m>(?i)\\W)', '\u017f', null],
  ['(?P<m>\\bx)', 'a x', ['x']],
  ['(?P<m>\\B)', 'a\ud83d\ude00b', null],
  ['(?P<m>\\pL+)', '\u03b1\u03b2\u03b31', ['\u03b1\u03b2\u03b3']],
  ['(?P<m>\\p{Greek}+)', 'a\u03b1\u03b2', ['\u03b1\u03b2']],
  ['(?P<m>\\PL)', 'ab1', ['1']],
  ['(?P<m>\\p{^Lu})', 'Ab', ['b']],
  ['(?P<m>[[:alpha:]]+)', 'ab1', ['ab']],
  ['(?P<m>[[:^digit:]])', '12a', ['a']],
  ['(?P<m>[]a]+)', ']a]', [']a]']],
  ['(?P<m>[^]a])', ']ab', ['b']],
  ['(?P<m>[a-]+)', '-a-', ['-a-']],
  ['(?P<m>\\x41\\x{1F600})', 'A\ud83d\ude00', ['A\ud83d\ude00']],
  ['(?P<m>\\101)', 'A', ['A']],
  ['(?P<m>\\Qa.b\\E)', 'axb a.b', ['a.b']],
  ['(?P<m>a{2,3})', 'aaaa', ['aaa']],
  ['(?P<m>a{,2})', 'a{,2}', ['a{,2}']],
  ['(?P<m>x{)', 'x{', ['x{']],
  ['(?P<m>^*a)', 'a', ['a']],
  ['(?P<m>(?i)ABC)', 'abc', ['abc']],
  ['(?P<m>(?i:a)b)', 'Ab AB', ['Ab']],
  ['(?P<m>a(?i)b|c)', 'C', ['C']],
  ['(?P<m>(a|)+)', 'aa', ['aa']],
  ['(?P<x>a)(?P<x>b)', 'ab', ['a', 'b']],
  ['\\1', 'a', 'error'],
  ['(?P<m>a**)', 'a', 'error'],
  ['(?P<a-b>x)', 'x', 'error'],
  ['(?=a)', 'a', 'error'],
  ['(?P<m>a{1001})', 'a', 'error'],
  ['(?P<m>\\pX)', 'a', 'error'],
  ['(?P<m>\\p{Old_Italic})', 'a', 'error'],
  ['(?P<m>[z-a])', 'a', 'error'],
  ['(a', 'a', 'error'],
  ['a)', 'a', 'error'],
  ['(?P<m>\\C)', 'a', 'error'],
  ['(?P<m>\\Z)', 'a', 'error'],
  ['(?P<n>a', 'a', 'error'],
  ['(?P<m>\\8)', '8', 'error'],
  ['(?P<m>((a{10}){10}){11})', 'a', 'error'],
];

describe('compileGoRegexp', () => {
  it.each(GO_CASES)('%j on %j matches as Go does', (pattern, text, expected) => {
    const compiled = compileGoRegexp(pattern);
    if (expected === 'error') {
      expect(compiled.ok).toBe(false);
      return;
    }
    if (!compiled.ok) throw new Error(compiled.problem);
    expect(compiled.regexp.exec(text) ?? null).toEqual(expected);
  });

  it('names the groups in order, repeated names included, and leaves unnamed groups out', () => {
    const compiled = compileGoRegexp('(a)(?P<x>b)(?<y>c)(?P<x>d)');
    expect(compiled.ok && compiled.regexp.names).toEqual(['x', 'y', 'x']);
    expect(compiled.ok && compiled.regexp.exec('abcd')).toEqual(['b', 'c', 'd']);
  });

  it("says why, in Go's words, it refuses a pattern Go refuses", () => {
    expect(compileGoRegexp('a**')).toEqual({
      ok: false,
      problem: 'error parsing regexp: invalid nested repetition operator: `**`',
    });
    expect(compileGoRegexp('(?P<a-b>x)')).toMatchObject({
      problem: expect.stringMatching(/invalid named capture/),
    });
    expect(compileGoRegexp('(?=a)')).toMatchObject({
      problem: expect.stringMatching(/invalid named capture|Perl syntax/),
    });
  });

  it('refuses, saying why, what Go accepts but JavaScript would match differently', () => {
    for (const pattern of ['(|a)*', '(a*?)+', '(?:b*|a)?', '(?P<x>a)+', '(?:(?P<x>a)|b)*']) {
      const compiled = compileGoRegexp(pattern);
      expect(compiled.ok, pattern).toBe(false);
      if (!compiled.ok) expect(compiled.problem).toMatch(/^the pattern /);
    }
    for (const pattern of ['(a|)*', '(a*)*', '(?P<x>a)?', '((a)|b)*', '(?:\\d*)?x']) {
      expect(compileGoRegexp(pattern).ok, pattern).toBe(true);
    }
  });

  it('translates every Unicode class name Go knows into one JavaScript knows', () => {
    for (const name of [
      'L',
      'Lu',
      'lu',
      'LC',
      'Cn',
      'Letter',
      'cased_letter',
      'Greek',
      'Han',
      'Nko',
      'Any',
      'Assigned',
      'ASCII',
      'digit',
    ]) {
      expect(compileGoRegexp(`\\p{${name}}`).ok, name).toBe(true);
    }
  });

  it('never throws: any text either compiles or is refused, and matching never throws', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 30 }),
        fc.string({ maxLength: 20 }),
        (pattern, text) => {
          const compiled = compileGoRegexp(pattern);
          if (compiled.ok) compiled.regexp.exec(text);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
