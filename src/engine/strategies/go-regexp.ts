// Go's regexp (regexp.Compile and FindStringSubmatch, Go 1.26) on re2js, a port of Go's engine:
// leftmost-first matching in time linear in the text, so neither the pattern (written by whoever
// writes a config) nor the text (from the objects converted) can make a match backtrack for
// seconds, as `(a+)+$` does on a JavaScript RegExp.
//
// re2js parses Go's syntax and matches as Go does (compared with Go 1.26 on hundreds of thousands
// of random patterns and texts), except where this file steps in before handing it the pattern:
// - Go accepts a name given to several groups (SubexpNames repeats it, and the reference keeps
//   the text of the last such group); re2js refuses it, so a repeated name is renamed for re2js
//   and reported under its own name.
// - Go looks a Unicode class up by its canonical name (\p{greek}, \pl, \p{Letter} and
//   \p{cased_letter} are \p{Greek}, \p{L}, \p{L} and \p{LC}) among Go's categories, scripts and
//   category aliases only; re2js takes exact names and knows more (Unicode 17 scripts, binary
//   properties such as \p{Alphabetic}). Each name is resolved as Go resolves it, and refused
//   where Go refuses it (\p{Old_Italic} too: its canonical name is no key of Go's table).
// - re2js reads `[:]` inside a class as a malformed [:name:] where Go reads a literal `[`: a `[`
//   that does not open a named class is escaped.
// - Go never sees a lone surrogate: encoding/json decodes one as U+FFFD, in the config and in the
//   objects alike, so both are matched as Go would decode them.
//
// Left as re2js has them: its Unicode tables are Unicode 17 where Go 1.26 ships Unicode 15.0, so a
// code point assigned since (U+1C89, say) is in a different class, and case-folds differently
// under (?i); and it refuses a pattern whose compiled program would exceed 1,398,101 instructions
// where Go allows 3,355,443 (a 1,500-character literal repeated {1000} times, for one).
import { RE2JS, RE2JSSyntaxException } from 're2js';

export interface GoRegexp {
  /** The pattern as Go holds it (regexp.String). */
  readonly pattern: string;
  /** SubexpNames: each group's name by its number, '' for an unnamed one and for the whole match. */
  readonly subexpNames: readonly string[];
  /**
   * FindStringSubmatch: the text of the whole leftmost-first match and of each group by number,
   * '' for a group that took no part; undefined without a match.
   */
  exec(text: string): string[] | undefined;
}

export type GoRegexpResult = { ok: true; regexp: GoRegexp } | { ok: false; problem: string };

export function compileGoRegexp(pattern: string): GoRegexpResult {
  const decoded = pattern.toWellFormed();
  const prepared = prepare(decoded);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(prepared.source);
  } catch (e) {
    if (e instanceof RE2JSSyntaxException) return { ok: false, problem: goMessage(e, prepared, decoded) };
    throw e;
  }
  const engine = compiled.re2();
  const subexpNames = new Array<string>(engine.numberOfCapturingGroups() + 1).fill('');
  for (const [name, group] of Object.entries(compiled.namedGroups())) {
    subexpNames[group] = prepared.originalNames.get(name) ?? name;
  }
  return { ok: true, regexp: matcher(decoded, subexpNames, engine) };
}

function matcher(
  pattern: string,
  subexpNames: readonly string[],
  engine: ReturnType<RE2JS['re2']>,
): GoRegexp {
  const groups = subexpNames.length;
  return {
    pattern,
    subexpNames,
    exec(text) {
      const decoded = text.isWellFormed() ? text : text.toWellFormed();
      const bounds: number[] | null = engine.findSubmatchIndex(decoded);
      if (!bounds) return undefined;
      const captured = new Array<string>(groups);
      for (let i = 0; i < groups; i++) {
        const start = bounds[2 * i] as number;
        captured[i] = start < 0 ? '' : decoded.slice(start, bounds[2 * i + 1]);
      }
      return captured;
    },
  };
}

/**
 * Go's message for re2js's error: the part of the pattern it quotes as written, not as rewritten;
 * the whole pattern where re2js quotes nothing (the size and nesting limits), except after a
 * trailing backslash, where Go quotes nothing too.
 */
function goMessage(e: RE2JSSyntaxException, prepared: Prepared, pattern: string): string {
  let quoted = e.error === TRAILING_BACKSLASH ? '' : pattern;
  if (e.input !== null) quoted = asWritten(e.input, prepared, pattern);
  return `error parsing regexp: ${e.error}: \`${quoted}\``;
}

const TRAILING_BACKSLASH = 'trailing backslash at end of expression';

/** The text of the pattern that a part of the rewritten one (its first occurrence) came from. */
function asWritten(part: string, prepared: Prepared, pattern: string): string {
  const start = prepared.source.indexOf(part);
  if (start < 0 || prepared.edits.length === 0) return part;
  const end = start + part.length;
  return pattern.slice(
    writtenOffset(pattern, prepared.edits, start, false),
    writtenOffset(pattern, prepared.edits, end, true),
  );
}

/**
 * An offset into the rewritten pattern as one into the pattern. Inside a rewrite, the same offset
 * into the text it replaced while the two read alike up to there (`\p` of `\p{Greek}` for
 * `\p{greek}`), else that text's start or end.
 */
function writtenOffset(pattern: string, edits: readonly Edit[], offset: number, isEnd: boolean): number {
  let shift = 0;
  for (const edit of edits) {
    const start = edit.start + shift;
    const end = start + edit.text.length;
    if (offset <= start) return offset - shift;
    if (offset < end || (offset === end && isEnd)) {
      const into = offset - start;
      if (into <= edit.end - edit.start && edit.text.startsWith(pattern.slice(edit.start, edit.start + into)))
        return edit.start + into;
      return isEnd ? edit.end : edit.start;
    }
    shift += edit.text.length - (edit.end - edit.start);
  }
  return offset - shift;
}

// --- what re2js is given: Go's pattern with the edits above

interface Prepared {
  source: string;
  /** The name given to a repeated group's later uses → the name in the pattern. */
  originalNames: ReadonlyMap<string, string>;
  /** The rewrites that made `source`, in order. */
  edits: readonly Edit[];
}

/** The pattern's text from `start` to `end` replaced by `text`. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

interface NamedGroup {
  name: string;
  /** Where the name starts and ends in the pattern. */
  start: number;
  end: number;
}

/**
 * Walks the pattern as Go's parser tokenizes it, far enough to find named groups, Unicode
 * classes and the `[` inside classes; everything else is left for re2js to parse and judge. A
 * Unicode class Go does not know becomes one re2js refuses too, so that re2js reports the
 * pattern's first error, as Go does.
 */
function prepare(pattern: string): Prepared {
  const edits: Edit[] = [];
  const groups: NamedGroup[] = [];
  let at = 0;
  while (at < pattern.length) {
    const c = pattern[at];
    if (c === '\\') at = readEscape(pattern, at, edits);
    else if (c === '[') at = readClass(pattern, at, edits);
    else if (c === '(') {
      const group = namedGroupAt(pattern, at);
      if (group) groups.push(group);
      at = group ? group.end + 1 : at + 1;
    } else at++;
  }
  const originalNames = renameRepeats(groups, edits);
  edits.sort((a, b) => a.start - b.start);
  return { source: applyEdits(pattern, edits), originalNames, edits };
}

/** After a backslash outside a class: \Q…\E skipped whole, a Unicode class resolved, else two characters. */
function readEscape(pattern: string, at: number, edits: Edit[]): number {
  const next = pattern[at + 1];
  if (next === 'Q') {
    const end = pattern.indexOf('\\E', at + 2);
    return end < 0 ? pattern.length : end + 2;
  }
  if (next === 'p' || next === 'P') return readUnicodeClass(pattern, at, edits);
  return at + 2;
}

/**
 * A bracketed class from its `[` (Go's parseClass): the index after its `]`. Escapes, named
 * classes and ranges are re2js's to parse; here only Unicode classes are resolved and a literal
 * `[` escaped. An unclosed class ends the walk: re2js refuses it.
 */
function readClass(pattern: string, open: number, edits: Edit[]): number {
  let at = pattern[open + 1] === '^' ? open + 2 : open + 1;
  let first = true;
  while (at < pattern.length && (pattern[at] !== ']' || first)) {
    first = false;
    const named = namedClassEnd(pattern, at);
    if (named !== undefined) {
      at = named;
      continue;
    }
    if (pattern[at] === '\\' && (pattern[at + 1] === 'p' || pattern[at + 1] === 'P')) {
      at = readUnicodeClass(pattern, at, edits);
      continue;
    }
    at = readClassChar(pattern, at, edits);
    if (pattern[at] === '-' && at + 1 < pattern.length && pattern[at + 1] !== ']') {
      at = readClassChar(pattern, at + 1, edits);
    }
  }
  return at + 1;
}

/** [:alpha:] and the like as Go finds them: `[:` then a `:]` somewhere after it. */
function namedClassEnd(pattern: string, at: number): number | undefined {
  if (!pattern.startsWith('[:', at) || pattern.length - at <= 2) return undefined;
  const close = pattern.indexOf(':]', at + 2);
  return close < 0 ? undefined : close + 2;
}

function readClassChar(pattern: string, at: number, edits: Edit[]): number {
  if (pattern[at] === '\\') return at + 2;
  if (pattern[at] === '[') edits.push({ start: at, end: at + 1, text: '\\[' });
  return at + ((pattern.codePointAt(at) as number) > 0xffff ? 2 : 1);
}

/** (?P<name> or (?<name> with a name Go accepts (ASCII letters, digits, underscores). */
function namedGroupAt(pattern: string, at: number): NamedGroup | undefined {
  if (pattern[at + 1] !== '?') return undefined;
  const rest = pattern.length - at;
  const withP = rest > 4 && pattern[at + 2] === 'P' && pattern[at + 3] === '<';
  const bare = rest > 3 && pattern[at + 2] === '<';
  if (!withP && !bare) return undefined;
  const start = at + (withP ? 4 : 3);
  const end = pattern.indexOf('>', at);
  if (end < 0) return undefined;
  const name = pattern.slice(start, end);
  return CAPTURE_NAME.test(name) ? { name, start, end } : undefined;
}

const CAPTURE_NAME = /^[A-Za-z0-9_]+$/;

/** \pN, \p{Name}, \p{^Name} and the \P forms, rewritten to the name re2js knows Go's class by. */
function readUnicodeClass(pattern: string, at: number, edits: Edit[]): number {
  const letter = pattern[at + 1] as string;
  const after = at + 2;
  if (after >= pattern.length) return pattern.length;
  let name: string;
  let end: number;
  if (pattern[after] === '{') {
    const close = pattern.indexOf('}', after);
    if (close < 0) return pattern.length;
    name = pattern.slice(after + 1, close);
    end = close + 1;
  } else {
    name = String.fromCodePoint(pattern.codePointAt(after) as number);
    end = after + name.length;
  }
  const negated = name.startsWith('^');
  const table = GO_UNICODE_CLASSES.get(canonicalName(negated ? name.slice(1) : name));
  edits.push({ start: at, end, text: table ? `\\${letter}{${negated ? '^' : ''}${table}}` : UNKNOWN_CLASS });
  return end;
}

/** A class no name of which re2js knows either. */
const UNKNOWN_CLASS = '\\p{}';

/** Go accepts a name on several groups: every use after the first gets a name of its own. */
function renameRepeats(groups: readonly NamedGroup[], edits: Edit[]): Map<string, string> {
  const taken = new Set(groups.map((g) => g.name));
  const seen = new Set<string>();
  const originalNames = new Map<string, string>();
  for (const group of groups) {
    if (!seen.has(group.name)) {
      seen.add(group.name);
      continue;
    }
    let suffix = 1;
    while (taken.has(`${group.name}_${suffix}`)) suffix++;
    const unique = `${group.name}_${suffix}`;
    taken.add(unique);
    originalNames.set(unique, group.name);
    edits.push({ start: group.start, end: group.end, text: unique });
  }
  return originalNames;
}

/** The pattern with the edits, sorted by position, applied. */
function applyEdits(pattern: string, edits: readonly Edit[]): string {
  if (edits.length === 0) return pattern;
  let out = '';
  let copied = 0;
  for (const edit of edits) {
    out += pattern.slice(copied, edit.start) + edit.text;
    copied = edit.end;
  }
  return out + pattern.slice(copied);
}

// --- Go's Unicode class names

// unicode.Categories, unicode.Scripts and unicode.CategoryAliases of Go 1.26 (Unicode 15.0).
const GO_CATEGORIES =
  'C Cc Cf Cn Co Cs L LC Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs';
const GO_CATEGORY_ALIASES =
  'Cased_Letter=LC Close_Punctuation=Pe Combining_Mark=M Connector_Punctuation=Pc Control=Cc Currency_Symbol=Sc Dash_Punctuation=Pd Decimal_Number=Nd Enclosing_Mark=Me Final_Punctuation=Pf Format=Cf Initial_Punctuation=Pi Letter=L Letter_Number=Nl Line_Separator=Zl Lowercase_Letter=Ll Mark=M Math_Symbol=Sm Modifier_Letter=Lm Modifier_Symbol=Sk Nonspacing_Mark=Mn Number=N Open_Punctuation=Ps Other=C Other_Letter=Lo Other_Number=No Other_Punctuation=Po Other_Symbol=So Paragraph_Separator=Zp Private_Use=Co Punctuation=P Separator=Z Space_Separator=Zs Spacing_Mark=Mc Surrogate=Cs Symbol=S Titlecase_Letter=Lt Unassigned=Cn Uppercase_Letter=Lu cntrl=Cc digit=Nd punct=P';
const GO_SCRIPTS =
  'Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square';

/** regexp/syntax's canonicalName: first letter upper, the rest lower, no `_`, `-` or spaces (ASCII only). */
export function canonicalName(name: string): string {
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

/**
 * Canonical name → the table re2js has under Go's key, in the order Go's unicodeTable looks:
 * the special names, then categories, then scripts (reachable only where the key is canonical
 * already), then aliases (set first here so that the earlier lookups win a clash).
 */
const GO_UNICODE_CLASSES: ReadonlyMap<string, string> = new Map([
  ...GO_CATEGORY_ALIASES.split(' ').map((pair) => {
    const [alias, category] = pair.split('=') as [string, string];
    return [canonicalName(alias), category] as const;
  }),
  ...GO_SCRIPTS.split(' ')
    .filter((script) => canonicalName(script) === script)
    .map((script) => [script, script] as const),
  ...GO_CATEGORIES.split(' ').map((category) => [canonicalName(category), category] as const),
  ['Any', 'Any'],
  ['Assigned', 'Assigned'],
  ['Ascii', 'Ascii'],
]);
