// Join templates: the expected texts, missing keys and refusals are what Go 1.26's text/template
// gives (Option("missingkey=error"), executed over the map of the fields present).
import { describe, expect, it } from 'vitest';
import { parseJoinTemplate } from './go-template.ts';

// [template, fields present, the text (or the key Go reports missing; 'error': Go refuses to parse it)]
const GO_CASES: [string, Record<string, unknown>, string | { missing: string } | 'error'][] = [
  ['{{.a}}{{.b}}', { a: 50, b: 'Gi' }, '50Gi'],
  ['{{.a}} <{{.b}}>', { a: 'Jane Doe', b: 'jane@example.com' }, 'Jane Doe <jane@example.com>'],
  ['{{ .a }}/{{.b}}', { a: 1000000, b: 123456789.5 }, '1e+06/1.234567895e+08'],
  ['{{.a}}|{{.b}}', { a: 100000, b: 0.0001 }, '100000|0.0001'],
  ['{{.a}}|{{.b}}', { a: 1e-5, b: 0 }, '1e-05|0'],
  ['{{.a}}|{{.b}}', { a: 1e21, b: 1.5 }, '1e+21|1.5'],
  ['{{.a}}|{{.b}}', { a: null, b: true }, '<no value>|true'],
  [
    '{{.a}}',
    { a: { z: 1, b: [1, 'x', null, true, { q: 2e21 }] } },
    'map[b:[1 x <nil> true map[q:2e+21]] z:1]',
  ],
  [
    '{{.a}}',
    { a: { '\u00e9': 1, z: 2, A: 3, '\ud83d\ude00': 4, '\u00ff': 5 } },
    'map[A:3 z:2 \u00e9:1 \u00ff:5 \ud83d\ude00:4]',
  ],
  ['{{.a}}{{.b}}', { a: [], b: {} }, '[]map[]'],
  ['{{.a}}{{.b}}', { a: 'x' }, { missing: 'b' }],
  ['{{- .a -}} x {{- .b}}', { a: 'A', b: 'B' }, 'AxB'],
  ['x  {{- .a}}', { a: 1 }, 'x1'],
  ['{{.a -}}  y', { a: 1 }, '1y'],
  ['{{.a}}{{/* c */}}{{.b}}', { a: 1, b: 2 }, '12'],
  ['{{/* c */ -}}  {{.a}}', { a: 1 }, '1'],
  ['{{- /* c */}}', { a: 1 }, ''],
  ['{{ .a\t}}', { a: 1 }, '1'],
  ['{{\n.a\n}}', { a: 1 }, '1'],
  ['plain', { a: 1 }, 'plain'],
  ['{{._a}}', { _a: 'u' }, 'u'],
  ['{{.\u00e9}}', { '\u00e9': 'e' }, 'e'],
  ['{{ /* c */ }}', { a: 1 }, 'error'],
  ['{{/* c */ }}', { a: 1 }, 'error'],
  ['{{.a', { a: 1 }, 'error'],
  ['{{.1a}}', { a: 1 }, 'error'],
  ['{{ .a\u00a0}}', { a: 1 }, 'error'],
  ['{{-.a}}', { a: 1 }, 'error'],
];

describe('parseJoinTemplate', () => {
  it.each(GO_CASES)('%j over %j renders as Go does', (source, values, expected) => {
    const parsed = parseJoinTemplate(source);
    if (expected === 'error') {
      expect(parsed.ok).toBe(false);
      return;
    }
    if (!parsed.ok) throw new Error(parsed.problem);
    const rendered = parsed.template.render(values, (name) => Object.hasOwn(values, name));
    expect(rendered).toEqual(
      typeof expected === 'string' ? { ok: true, text: expected } : { ok: false, ...expected },
    );
  });

  it('lists the fields it references, once each', () => {
    const parsed = parseJoinTemplate('{{.a}}-{{.b}}-{{.a}}');
    expect(parsed.ok && parsed.template.references).toEqual(['a', 'b']);
  });

  it.each([
    ['{{.}}', /the whole data/],
    ['{{.a.b}}', /a chained field/],
    ['{{.a | printf "%s"}}', /a pipeline/],
    ['{{if .a}}x{{end}}', /\{\{if\}\}/],
    ['{{$x := .a}}', /a variable/],
    ['{{printf "%v" .a}}', /a function call \(printf\)/],
    ['{{"x"}}', /an expression other than a field/],
  ])('refuses %j, naming the construct', (source, construct) => {
    const parsed = parseJoinTemplate(source);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(construct);
  });
});
