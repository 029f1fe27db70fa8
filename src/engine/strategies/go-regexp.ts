// Go's regexp (RE2 syntax, as regexp.Compile reads it) on JavaScript's engine: a pattern is parsed
// the way Go parses it, refused where Go refuses it, and translated into a RegExp (the `v` flag)
// that matches the same text and captures the same named groups as FindStringSubmatch.
//
// What the translation writes out explicitly instead of trusting JavaScript's reading of the same
// syntax: `.` (no \n unless (?s)), `^` and `$` (text edges; line edges under (?m), \n only), \s
// ([\t\n\f\r ], no \v), \d \w and the POSIX classes (ASCII), Go's Unicode class names, and every
// literal (escaped by code point). (?i), (?m), (?s) and (?U) are applied per atom. The `v` flag
// gives Go's case folding of negated classes (complement after folding).
//
// Where the two engines would still differ, the pattern is refused, naming why: a repetition
// of something that can match the empty string and prefers to (JavaScript skips an iteration
// that matches nothing, Go takes it), and a named group inside a repetition (JavaScript forgets
// a group's capture on each iteration, Go keeps the last one that matched). Unnamed groups are
// never read, so they become non-capturing. Unicode classes follow Node's Unicode tables (Go 1.26
// ships Unicode 15.0): a code point assigned since then matches differently. Go's size limits
// (repetition counts, nesting, compiled size) are checked on the parsed pattern; the compiled
// size is Go's estimate, computed without Go's factoring of alternatives, and groups nested more
// than 1000 deep are refused even where Go, which counts only capturing ones, would take them.
//
// JavaScript backtracks where Go's engine runs in linear time: a pattern such as (a+)+$ takes
// exponential time on a long text it does not match, and the text comes from the objects being
// converted. Only a linear-time engine (an RE2 port) would close that.

export interface GoRegexp {
  /** The RegExp source it translated to (for messages and tests). */
  readonly source: string;
  /** The names of the named capture groups, in order (a name may repeat). */
  readonly names: readonly string[];
  /**
   * The text each named group captured in the leftmost-first match, '' for a group that did not
   * take part (FindStringSubmatch, indexed like `names`), or undefined without a match.
   */
  exec(text: string): string[] | undefined;
}

export type GoRegexpResult = { ok: true; regexp: GoRegexp } | { ok: false; problem: string };

export function compileGoRegexp(pattern: string): GoRegexpResult {
  if (!pattern.isWellFormed()) return { ok: false, problem: 'error parsing regexp: invalid UTF-8' };
  let tree: Node;
  const parser = new Parser(pattern);
  try {
    tree = parser.parseAll();
  } catch (e) {
    if (e instanceof GoSyntaxError) return { ok: false, problem: e.message };
    throw e;
  }
  const refusal = limitProblem(tree, pattern) ?? untranslatable(tree);
  if (refusal) return { ok: false, problem: refusal };
  const source = `${NOT_INSIDE_A_PAIR}(?:${emit(tree)})`;
  let regexp: RegExp;
  try {
    regexp = new RegExp(source, 'v');
  } catch (e) {
    return {
      ok: false,
      problem: `the pattern is beyond JavaScript's regular expressions: ${(e as Error).message}`,
    };
  }
  return { ok: true, regexp: matcher(source, regexp, parser.names) };
}

function matcher(source: string, regexp: RegExp, names: readonly string[]): GoRegexp {
  const count = names.length;
  return {
    source,
    names,
    exec(text) {
      const match = regexp.exec(text);
      if (!match) return undefined;
      const captured = new Array<string>(count);
      for (let i = 0; i < count; i++) captured[i] = match[i + 1] ?? '';
      return captured;
    },
  };
}

// --- the parsed pattern

type Node =
  | { t: 'literal'; codePoint: number; fold: boolean }
  | { t: 'set'; source: string; fold: boolean }
  | { t: 'assertion'; source: string }
  | { t: 'group'; capture: boolean; named: boolean; body: Node }
  | { t: 'concat'; items: Node[] }
  | { t: 'alternate'; branches: Node[] }
  | { t: 'repeat'; min: number; max: number; lazy: boolean; braces: boolean; sub: Node };

const FOLD = 1;
const MULTI_LINE = 2;
const DOT_NL = 4;
const UNGREEDY = 8;

const MAX_REPEAT = 1000;
const MAX_HEIGHT = 1000;
const MAX_SIZE = Math.floor((128 << 20) / 40); // Go's maxSize: 128 MiB of 40-byte instructions
const MAX_CODE_POINT = 0x10ffff;

class GoSyntaxError extends Error {}

function syntaxError(code: string, expr: string): GoSyntaxError {
  return new GoSyntaxError(`error parsing regexp: ${code}: \`${expr}\``);
}

class Parser {
  readonly names: string[] = [];
  private readonly text: string;
  private pos = 0;

  constructor(text: string) {
    this.text = text;
  }

  parseAll(): Node {
    const node = this.parseAlternation(0, false);
    if (this.pos < this.text.length) throw syntaxError('unexpected )', this.text);
    return node;
  }

  /** Alternatives up to a `)` (left for the caller) or the end; flags set by (?i) last to the group's end. */
  private parseAlternation(initialFlags: number, inGroup: boolean, depth = 0): Node {
    if (depth > MAX_HEIGHT) throw syntaxError('expression nests too deeply', this.text);
    let flags = initialFlags;
    const branches: Node[] = [];
    let items: Node[] = [];
    // Where the previous token began, when it was a repetition (Go refuses to stack them).
    let lastRepeat: number | undefined;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos] as string;
      if (c === ')') {
        if (!inGroup) throw syntaxError('unexpected )', this.text);
        break;
      }
      let repeat: number | undefined;
      switch (c) {
        case '|':
          this.pos++;
          branches.push(concat(items));
          items = [];
          break;
        case '(': {
          const opened = this.parseGroupOpening(flags);
          if (opened.kind === 'flags') {
            flags = opened.flags;
            break;
          }
          const body = this.parseAlternation(opened.flags, true, depth + 1);
          if (this.text[this.pos] !== ')') throw syntaxError('missing closing )', this.text);
          this.pos++;
          const named = opened.kind === 'named';
          items.push({ t: 'group', capture: named || opened.kind === 'capture', named, body });
          break;
        }
        case '^':
          this.pos++;
          items.push({ t: 'assertion', source: flags & MULTI_LINE ? '(?<![^\\n])' : '^' });
          break;
        case '$':
          this.pos++;
          items.push({ t: 'assertion', source: flags & MULTI_LINE ? '(?![^\\n])' : '$' });
          break;
        case '.':
          this.pos++;
          items.push({ t: 'set', source: flags & DOT_NL ? ANY_CHAR : '[^\\n]', fold: false });
          break;
        case '[':
          items.push(this.parseClass(flags));
          break;
        case '*':
        case '+':
        case '?': {
          const before = this.pos;
          this.pos++;
          const [min, max] = c === '*' ? [0, -1] : c === '+' ? [1, -1] : [0, 1];
          this.applyRepeat(items, min, max, false, flags, before, lastRepeat);
          repeat = before;
          break;
        }
        case '{': {
          const before = this.pos;
          const counts = this.parseRepeatCounts();
          if (!counts) {
            this.pos++;
            items.push({ t: 'literal', codePoint: 0x7b, fold: (flags & FOLD) !== 0 });
            break;
          }
          const [min, max] = counts;
          if (min < 0 || min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) {
            throw syntaxError('invalid repeat count', this.text.slice(before, this.pos));
          }
          this.applyRepeat(items, min, max, true, flags, before, lastRepeat);
          repeat = before;
          break;
        }
        case '\\':
          items.push(...this.parseBackslash(flags));
          break;
        default: {
          const codePoint = this.text.codePointAt(this.pos) as number;
          this.pos += codePoint > 0xffff ? 2 : 1;
          items.push({ t: 'literal', codePoint, fold: (flags & FOLD) !== 0 });
        }
      }
      lastRepeat = repeat;
    }
    branches.push(concat(items));
    return branches.length === 1 ? (branches[0] as Node) : { t: 'alternate', branches };
  }

  private applyRepeat(
    items: Node[],
    min: number,
    max: number,
    braces: boolean,
    flags: number,
    before: number,
    lastRepeat: number | undefined,
  ): void {
    let lazy = (flags & UNGREEDY) !== 0;
    if (this.text[this.pos] === '?') {
      this.pos++;
      lazy = !lazy;
    }
    const operator = this.text.slice(before, this.pos);
    if (lastRepeat !== undefined) {
      throw syntaxError('invalid nested repetition operator', this.text.slice(lastRepeat, this.pos));
    }
    const sub = items.pop();
    if (!sub) throw syntaxError('missing argument to repetition operator', operator);
    const node: Node = { t: 'repeat', min, max, lazy, braces, sub };
    if (braces && (min >= 2 || max >= 2) && !repeatIsValid(node, MAX_REPEAT)) {
      throw syntaxError('invalid repeat count', operator);
    }
    items.push(node);
  }

  /** {n}, {n,} or {n,m}: [min, max] (max -1: unbounded; min -1: a number too large), or undefined when not a repeat. */
  private parseRepeatCounts(): [number, number] | undefined {
    let at = this.pos + 1;
    const first = this.parseInt(at);
    if (!first) return undefined;
    at = first.end;
    let min = first.value;
    let max: number;
    if (this.text[at] !== ',') max = min;
    else {
      at++;
      if (this.text[at] === '}') max = -1;
      else {
        const second = this.parseInt(at);
        if (!second) return undefined;
        at = second.end;
        max = second.value;
        if (max < 0) min = -1;
      }
    }
    if (this.text[at] !== '}') return undefined;
    this.pos = at + 1;
    return [min, max];
  }

  /** Go's parseInt: digits without a leading zero; -1 past 10^8. */
  private parseInt(at: number): { value: number; end: number } | undefined {
    const text = this.text;
    if (!isDigit(text[at])) return undefined;
    if (text[at] === '0' && isDigit(text[at + 1])) return undefined;
    let end = at;
    let value = 0;
    while (isDigit(text[end])) {
      if (value >= 0) value = value >= 1e8 ? -1 : value * 10 + Number(text[end]);
      end++;
    }
    return { value, end };
  }

  /** After `(`: a capture, a named capture, a non-capturing group, or a flags change. */
  private parseGroupOpening(flags: number): { kind: 'capture' | 'named' | 'plain' | 'flags'; flags: number } {
    const text = this.text;
    const start = this.pos;
    if (text[start + 1] !== '?') {
      this.pos++;
      return { kind: 'capture', flags };
    }
    const rest = text.slice(start);
    const withP = rest.length > 4 && rest[2] === 'P' && rest[3] === '<';
    const withName = rest.length > 3 && rest[2] === '<';
    if (withP || withName) {
      const end = rest.indexOf('>');
      if (end < 0) throw syntaxError('invalid named capture', rest);
      const name = rest.slice(withP ? 4 : 3, end);
      if (!/^[A-Za-z0-9_]+$/.test(name)) throw syntaxError('invalid named capture', rest.slice(0, end + 1));
      this.names.push(name);
      this.pos = start + end + 1;
      return { kind: 'named', flags };
    }
    return this.parseFlags(flags);
  }

  /** (?flags) or (?flags:, Go's parsePerlFlags. */
  private parseFlags(initial: number): { kind: 'plain' | 'flags'; flags: number } {
    const text = this.text;
    const start = this.pos;
    let at = start + 2;
    let flags = initial;
    let negated = false;
    let sawFlag = false;
    while (at < text.length) {
      const c = String.fromCodePoint(text.codePointAt(at) as number);
      at += c.length;
      const bit = c === 'i' ? FOLD : c === 'm' ? MULTI_LINE : c === 's' ? DOT_NL : c === 'U' ? UNGREEDY : 0;
      if (bit) {
        flags = negated ? flags & ~bit : flags | bit;
        sawFlag = true;
        continue;
      }
      if (c === '-' && !negated) {
        negated = true;
        sawFlag = false;
        continue;
      }
      if ((c === ':' || c === ')') && !(negated && !sawFlag)) {
        this.pos = at;
        return { kind: c === ':' ? 'plain' : 'flags', flags };
      }
      break;
    }
    throw syntaxError('invalid or unsupported Perl syntax', text.slice(start, at));
  }

  /** A backslash outside a class: an assertion, \Q…\E, a class escape or one literal. */
  private parseBackslash(flags: number): Node[] {
    const text = this.text;
    const next = text[this.pos + 1];
    const fold = (flags & FOLD) !== 0;
    const assertion = next === undefined ? undefined : ASSERTION_ESCAPES[next];
    if (assertion) {
      this.pos += 2;
      return [{ t: 'assertion', source: assertion }];
    }
    if (next === 'C') throw syntaxError('invalid escape sequence', '\\C');
    if (next === 'Q') {
      const end = text.indexOf('\\E', this.pos + 2);
      const literal = text.slice(this.pos + 2, end < 0 ? text.length : end);
      this.pos = end < 0 ? text.length : end + 2;
      return Array.from(literal, (char) => ({
        t: 'literal' as const,
        codePoint: char.codePointAt(0) as number,
        fold,
      }));
    }
    const unicode = this.parseUnicodeClass();
    if (unicode) return [{ t: 'set', source: unicode, fold }];
    const perl = next === undefined ? undefined : PERL_GROUPS[next];
    if (perl) {
      this.pos += 2;
      return [{ t: 'set', source: perl, fold }];
    }
    return [{ t: 'literal', codePoint: this.parseEscape(), fold }];
  }

  /** \pN, \p{Name}, \PN, \P{Name}, \p{^Name}: a JavaScript set, or undefined when not one. */
  private parseUnicodeClass(): string | undefined {
    const text = this.text;
    const letter = text[this.pos + 1];
    if (letter !== 'p' && letter !== 'P') return undefined;
    let negated = letter === 'P';
    const afterLetter = this.pos + 2;
    if (afterLetter >= text.length) throw syntaxError('invalid character class range', text.slice(this.pos));
    let name: string;
    let end: number;
    if (text[afterLetter] !== '{') {
      name = String.fromCodePoint(text.codePointAt(afterLetter) as number);
      end = afterLetter + name.length;
    } else {
      const close = text.indexOf('}', this.pos);
      if (close < 0) throw syntaxError('invalid character class range', text.slice(this.pos));
      name = text.slice(afterLetter + 1, close);
      end = close + 1;
    }
    if (name.startsWith('^')) {
      negated = !negated;
      name = name.slice(1);
    }
    const set = UNICODE_CLASSES.get(canonicalName(name));
    if (!set) throw syntaxError('invalid character class range', text.slice(this.pos, end));
    this.pos = end;
    return negated ? `[^${set}]` : set;
  }

  /** Go's parseEscape: the code point of a single-character escape. */
  private parseEscape(): number {
    const text = this.text;
    const start = this.pos;
    if (start + 1 >= text.length) throw syntaxError('trailing backslash at end of expression', '');
    const c = String.fromCodePoint(text.codePointAt(start + 1) as number);
    let at = start + 1 + c.length;
    const invalid = () => syntaxError('invalid escape sequence', text.slice(start, at));
    const simple = C_ESCAPES[c];
    if (simple !== undefined) {
      this.pos = at;
      return simple;
    }
    if (c >= '0' && c <= '7') {
      if (c !== '0' && !isOctal(text[at])) throw invalid();
      let value = Number(c);
      for (let i = 1; i < 3 && isOctal(text[at]); i++) value = value * 8 + Number(text[at++]);
      this.pos = at;
      return value;
    }
    if (c === 'x') return this.parseHexEscape(start);
    if (c.length === 1 && c < '\x80' && !/[A-Za-z0-9]/.test(c)) {
      this.pos = at;
      return c.charCodeAt(0);
    }
    throw invalid();
  }

  private parseHexEscape(start: number): number {
    const text = this.text;
    let at = start + 2;
    const invalid = () =>
      syntaxError('invalid escape sequence', text.slice(start, Math.min(at, text.length)));
    if (text[at] === '{') {
      at++;
      let value = 0;
      let digits = 0;
      for (;;) {
        const c = text[at];
        if (c === undefined) throw invalid();
        at++;
        if (c === '}') break;
        const digit = hexValue(c);
        if (digit < 0) throw invalid();
        value = value * 16 + digit;
        if (value > MAX_CODE_POINT) throw invalid();
        digits++;
      }
      if (digits === 0) throw invalid();
      this.pos = at;
      return value;
    }
    const high = hexValue(text[at]);
    const low = hexValue(text[at + 1]);
    at += Math.min(2, text.length - at);
    if (high < 0 || low < 0) throw invalid();
    this.pos = at;
    return high * 16 + low;
  }

  /** A bracketed class, Go's parseClass, as a JavaScript set. */
  private parseClass(flags: number): Node {
    const text = this.text;
    const whole = text.slice(this.pos);
    this.pos++;
    let negated = false;
    if (text[this.pos] === '^') {
      negated = true;
      this.pos++;
    }
    const parts: string[] = [];
    let first = true;
    while (this.pos >= text.length || text[this.pos] !== ']' || first) {
      if (this.pos >= text.length) throw syntaxError('missing closing ]', whole);
      first = false;
      if (text.startsWith('[:', this.pos) && this.pos + 2 < text.length) {
        const named = this.parseNamedClass();
        if (named) {
          parts.push(named);
          continue;
        }
      }
      const unicode = this.parseUnicodeClass();
      if (unicode) {
        parts.push(unicode);
        continue;
      }
      const perl = text[this.pos] === '\\' ? PERL_GROUPS[text[this.pos + 1] as string] : undefined;
      if (perl) {
        this.pos += 2;
        parts.push(perl);
        continue;
      }
      const rangeStart = this.pos;
      const low = this.parseClassChar(whole);
      let high = low;
      if (text[this.pos] === '-' && this.pos + 1 < text.length && text[this.pos + 1] !== ']') {
        this.pos++;
        high = this.parseClassChar(whole);
        if (high < low) throw syntaxError('invalid character class range', text.slice(rangeStart, this.pos));
      }
      parts.push(low === high ? codePointEscape(low) : `${codePointEscape(low)}-${codePointEscape(high)}`);
    }
    this.pos++;
    return { t: 'set', source: `[${negated ? '^' : ''}${parts.join('')}]`, fold: (flags & FOLD) !== 0 };
  }

  private parseClassChar(whole: string): number {
    const text = this.text;
    if (this.pos >= text.length) throw syntaxError('missing closing ]', whole);
    if (text[this.pos] === '\\') return this.parseEscape();
    const codePoint = text.codePointAt(this.pos) as number;
    this.pos += codePoint > 0xffff ? 2 : 1;
    return codePoint;
  }

  /** [:alpha:] and the like; an unknown name is an error, no `:]` is not a named class. */
  private parseNamedClass(): string | undefined {
    const text = this.text;
    const close = text.indexOf(':]', this.pos + 2);
    if (close < 0) return undefined;
    const name = text.slice(this.pos, close + 2);
    const set = POSIX_GROUPS[name];
    if (!set) throw syntaxError('invalid character class range', name);
    this.pos = close + 2;
    return set;
  }
}

function concat(items: Node[]): Node {
  return items.length === 1 ? (items[0] as Node) : { t: 'concat', items };
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function isOctal(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '7';
}

function hexValue(c: string | undefined): number {
  return c !== undefined && /^[0-9A-Fa-f]$/.test(c) ? Number.parseInt(c, 16) : -1;
}

// --- what JavaScript is given for Go's escapes and classes

const ANY_CHAR = '[\\u{0}-\\u{10FFFF}]';

/**
 * V8 tries an empty-width match (\B) between the two halves of a surrogate pair, where Go sees
 * one code point: a match may start only where a whole code point precedes, or at the start.
 */
const NOT_INSIDE_A_PAIR = '(?<=^|[^])';

const ASSERTION_ESCAPES: Readonly<Record<string, string>> = { A: '^', z: '$', b: '\\b', B: '\\B' };

const C_ESCAPES: Readonly<Record<string, number>> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };

/** A code point as the `v` flag reads it anywhere: letters and digits as is, the rest escaped. */
function codePointEscape(codePoint: number): string {
  const char = String.fromCodePoint(codePoint);
  return /^[A-Za-z0-9]$/.test(char) ? char : `\\u{${codePoint.toString(16)}}`;
}

type Ranges = readonly (readonly [number, number])[];

function rangesSet(ranges: Ranges, negated: boolean): string {
  const body = ranges.map(([lo, hi]) =>
    lo === hi ? codePointEscape(lo) : `${codePointEscape(lo)}-${codePointEscape(hi)}`,
  );
  return `[${negated ? '^' : ''}${body.join('')}]`;
}

const DIGIT: Ranges = [[0x30, 0x39]];
const SPACE: Ranges = [
  [0x09, 0x0a],
  [0x0c, 0x0d],
  [0x20, 0x20],
];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];

const PERL_GROUPS: Readonly<Record<string, string>> = {
  d: rangesSet(DIGIT, false),
  D: rangesSet(DIGIT, true),
  s: rangesSet(SPACE, false),
  S: rangesSet(SPACE, true),
  w: rangesSet(WORD, false),
  W: rangesSet(WORD, true),
};

const POSIX_RANGES: Readonly<Record<string, Ranges>> = {
  alnum: [
    [0x30, 0x39],
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  alpha: [
    [0x41, 0x5a],
    [0x61, 0x7a],
  ],
  ascii: [[0x00, 0x7f]],
  blank: [
    [0x09, 0x09],
    [0x20, 0x20],
  ],
  cntrl: [
    [0x00, 0x1f],
    [0x7f, 0x7f],
  ],
  digit: DIGIT,
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [
    [0x21, 0x2f],
    [0x3a, 0x40],
    [0x5b, 0x60],
    [0x7b, 0x7e],
  ],
  space: [
    [0x09, 0x0d],
    [0x20, 0x20],
  ],
  upper: [[0x41, 0x5a]],
  word: WORD,
  xdigit: [
    [0x30, 0x39],
    [0x41, 0x46],
    [0x61, 0x66],
  ],
};

const POSIX_GROUPS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(POSIX_RANGES).flatMap(([name, ranges]) => [
    [`[:${name}:]`, rangesSet(ranges, false)],
    [`[:^${name}:]`, rangesSet(ranges, true)],
  ]),
);

// Go's unicode.Categories, unicode.Scripts and unicode.CategoryAliases (Go 1.26), looked up by
// canonicalName as regexp/syntax does. A script whose name is not already canonical (Old_Italic,
// SignWriting) cannot be named in Go 1.26: canonicalName folds it to a key Scripts lacks.
const GO_CATEGORIES =
  'C Cc Cf Cn Co Cs L LC Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs';
const GO_CATEGORY_ALIASES =
  'Cased_Letter=LC Close_Punctuation=Pe Combining_Mark=M Connector_Punctuation=Pc Control=Cc Currency_Symbol=Sc Dash_Punctuation=Pd Decimal_Number=Nd Enclosing_Mark=Me Final_Punctuation=Pf Format=Cf Initial_Punctuation=Pi Letter=L Letter_Number=Nl Line_Separator=Zl Lowercase_Letter=Ll Mark=M Math_Symbol=Sm Modifier_Letter=Lm Modifier_Symbol=Sk Nonspacing_Mark=Mn Number=N Open_Punctuation=Ps Other=C Other_Letter=Lo Other_Number=No Other_Punctuation=Po Other_Symbol=So Paragraph_Separator=Zp Private_Use=Co Punctuation=P Separator=Z Space_Separator=Zs Spacing_Mark=Mc Surrogate=Cs Symbol=S Titlecase_Letter=Lt Unassigned=Cn Uppercase_Letter=Lu cntrl=Cc digit=Nd punct=P';
const GO_SCRIPTS =
  'Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square';

/** Go's canonicalName: first letter upper, the rest lower, without `_`, `-` and spaces (bytes). */
function canonicalName(name: string): string {
  let out = '';
  let first = true;
  for (const c of name) {
    if (c === '_' || c === '-' || c === ' ') continue;
    if (first) {
      out += c >= 'a' && c <= 'z' ? c.toUpperCase() : c;
      first = false;
    } else out += c >= 'A' && c <= 'Z' ? c.toLowerCase() : c;
  }
  return out;
}

const UNICODE_CLASSES: ReadonlyMap<string, string> = new Map([
  ...GO_CATEGORIES.split(' ').map((name) => [canonicalName(name), `\\p{gc=${name}}`] as const),
  ...GO_CATEGORY_ALIASES.split(' ').map((pair) => {
    const [alias, actual] = pair.split('=') as [string, string];
    return [canonicalName(alias), `\\p{gc=${actual}}`] as const;
  }),
  ...GO_SCRIPTS.split(' ')
    .filter((name) => canonicalName(name) === name)
    .map((name) => [name, `\\p{sc=${name}}`] as const),
  ['Any', ANY_CHAR],
  ['Assigned', '[^\\p{gc=Cn}]'],
  ['Ascii', '[\\u{0}-\\u{7f}]'],
]);

// --- Go's limits, and what the translation cannot carry

function repeatIsValid(node: Node, budget: number): boolean {
  let n = budget;
  if (node.t === 'repeat' && node.braces) {
    let m = node.max;
    if (m === 0) return true;
    if (m < 0) m = node.min;
    if (m > n) return false;
    if (m > 0) n = Math.floor(n / m);
  }
  return children(node).every((child) => repeatIsValid(child, n));
}

function children(node: Node): readonly Node[] {
  switch (node.t) {
    case 'group':
      return [node.body];
    case 'concat':
      return node.items;
    case 'alternate':
      return node.branches;
    case 'repeat':
      return [node.sub];
    default:
      return [];
  }
}

function limitProblem(tree: Node, pattern: string): string | undefined {
  if (height(tree) > MAX_HEIGHT) return `error parsing regexp: expression nests too deeply: \`${pattern}\``;
  if (compiledSize(tree) > MAX_SIZE) return `error parsing regexp: expression too large: \`${pattern}\``;
  return undefined;
}

/** Go's calcHeight: a non-capturing group is no node of its own. */
function height(node: Node): number {
  let highest = 0;
  for (const child of children(node)) highest = Math.max(highest, height(child));
  return node.t === 'group' && !node.capture ? highest : highest + 1;
}

/** Go's calcSize: the instructions the compiled program will take. */
function compiledSize(node: Node): number {
  let size: number;
  switch (node.t) {
    case 'group':
      size = (node.capture ? 2 : 0) + compiledSize(node.body);
      break;
    case 'concat':
      size = node.items.reduce((sum, item) => sum + compiledSize(item), 0);
      break;
    case 'alternate':
      size = node.branches.reduce((sum, branch) => sum + compiledSize(branch), 0) + node.branches.length - 1;
      break;
    case 'repeat':
      size = repeatSize(node.min, node.max, compiledSize(node.sub));
      break;
    default:
      size = 1;
  }
  return Math.max(1, size);
}

function repeatSize(min: number, max: number, sub: number): number {
  if (max === -1) return min === 0 ? 2 + sub : min === 1 ? 1 + sub : 1 + min * sub;
  if (min === 0 && max === 1) return 1 + sub;
  return max * sub + (max - min);
}

function untranslatable(tree: Node): string | undefined {
  for (const node of walk(tree)) {
    if (node.t !== 'repeat') continue;
    if (node.max !== 0 && matchesEmpty(node.sub) && prefersEmpty(node.sub)) {
      return 'the pattern repeats an expression that can match the empty string and prefers to (a lazy quantifier, or an alternative that can match nothing before others): Go and JavaScript end such a repetition differently; rewrite it so the repeated part always consumes text';
    }
    if ((node.max === -1 || node.max > 1) && [...walk(node.sub)].some((n) => n.t === 'group' && n.named)) {
      return 'the pattern has a named group inside a repetition: JavaScript forgets its capture on each iteration where Go keeps the last one; capture the whole repetition instead';
    }
  }
  return undefined;
}

function* walk(node: Node): Generator<Node> {
  yield node;
  for (const child of children(node)) yield* walk(child);
}

function matchesEmpty(node: Node): boolean {
  switch (node.t) {
    case 'literal':
    case 'set':
      return false;
    case 'assertion':
      return true;
    case 'group':
      return matchesEmpty(node.body);
    case 'concat':
      return node.items.every(matchesEmpty);
    case 'alternate':
      return node.branches.some(matchesEmpty);
    case 'repeat':
      return node.min === 0 || matchesEmpty(node.sub);
  }
}

/** Whether some choice inside prefers matching nothing over matching text. */
function prefersEmpty(node: Node): boolean {
  for (const n of walk(node)) {
    if (n.t === 'repeat' && n.lazy && n.max !== n.min) return true;
    if (n.t === 'alternate' && n.branches.slice(0, -1).some(matchesEmpty)) return true;
  }
  return false;
}

// --- JavaScript source

function emit(node: Node): string {
  switch (node.t) {
    case 'literal': {
      const escaped = codePointEscape(node.codePoint);
      return node.fold ? `(?i:${escaped})` : escaped;
    }
    case 'set':
      return node.fold ? `(?i:${node.source})` : node.source;
    case 'assertion':
      return node.source;
    case 'group':
      return `(${node.named ? '' : '?:'}${emit(node.body)})`;
    case 'concat':
      return node.items.map(emit).join('');
    case 'alternate':
      return node.branches.map(emit).join('|');
    case 'repeat':
      return `${emitOperand(node.sub)}${quantifier(node)}`;
  }
}

/** An operand JavaScript can quantify: a literal, a set or a group; anything else is wrapped. */
function emitOperand(node: Node): string {
  const source = emit(node);
  const atomic = node.t === 'group' || node.t === 'set' || node.t === 'literal';
  return atomic ? source : `(?:${source})`;
}

function quantifier(node: Extract<Node, { t: 'repeat' }>): string {
  const { min, max, lazy, braces } = node;
  let text: string;
  if (!braces) text = max === 1 ? '?' : min === 0 ? '*' : '+';
  else if (min === max) text = `{${min}}`;
  else text = max === -1 ? `{${min},}` : `{${min},${max}}`;
  return lazy ? `${text}?` : text;
}
