import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readOutputFlag, renderOutput } from './output.ts';

describe('readOutputFlag', () => {
  it.each([
    [['-o', 'json'], { format: 'json', used: 2 }],
    [['--output', 'yaml'], { format: 'yaml', used: 2 }],
    [['-o=table'], { format: 'table', used: 1 }],
    [['--output=json'], { format: 'json', used: 1 }],
    [['-oyaml'], { format: 'yaml', used: 1 }],
  ])('%j', (args, expected) => {
    expect(readOutputFlag(args, 0)).toEqual(expected);
  });

  it('is not another flag, and refuses a format no command prints or a missing one', () => {
    expect(readOutputFlag(['--all'], 0)).toBeUndefined();
    expect(() => readOutputFlag(['-o', 'wide'], 0)).toThrow('-o takes table, json, yaml, got "wide"');
    expect(() => readOutputFlag(['-o'], 0)).toThrow('got nothing');
    expect(() => readOutputFlag(['--output=xml'], 0)).toThrow('--output takes');
  });
});

describe('renderOutput', () => {
  const data = [{ target: 'widgets.example.com', moves: 2 }];
  it('writes the same data as JSON and YAML, and the table as the command draws it', () => {
    expect(JSON.parse(renderOutput('json', data, () => 'unused'))).toEqual(data);
    expect(parse(renderOutput('yaml', data, () => 'unused'))).toEqual(data);
    expect(renderOutput('table', data, () => 'TARGET\n')).toBe('TARGET\n');
  });
});
