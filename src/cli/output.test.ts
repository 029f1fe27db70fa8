import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderOutput } from './output.ts';

describe('renderOutput', () => {
  const data = [{ target: 'widgets.example.com', moves: 2 }];
  it('writes the same data as JSON and YAML, and the table as the command draws it', () => {
    expect(JSON.parse(renderOutput('json', data, () => 'unused'))).toEqual(data);
    expect(parse(renderOutput('yaml', data, () => 'unused'))).toEqual(data);
    expect(renderOutput('table', data, () => 'TARGET\n')).toBe('TARGET\n');
  });
});
