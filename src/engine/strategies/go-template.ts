// The part of Go's text/template a join template uses: literal text and `{{.name}}` references
// to the named fields, with Go's trim markers (`{{- ` and ` -}}`), spaces inside the braces
// and comments (`{{/* … */}}`). Any other action (pipelines, functions, variables, if, range,
// with, define, template, block, `{{.}}`, chained fields) is refused, naming it, as is text Go
// would not parse (an unclosed action).
//
// Executed as the reference executes it (Option("missingkey=error") over a map of the fields
// present): a reference to a field absent from the object fails the conversion, and a value
// prints as Go's fmt.Sprint prints it: numbers in %v form (1e+06, not 1000000), null as
// "<no value>", objects and arrays as map[k:v …] and [a b …] with keys sorted byte-wise.
import { compareUtf8, formatGoFloat } from '../go-values.ts';

export interface JoinTemplate {
  /** The field names the template references, each once, in order of first use. */
  readonly references: readonly string[];
  /** The text, or the name of the first referenced field `present` lacks. */
  render(values: Readonly<Record<string, unknown>>, present: (name: string) => boolean): Rendered;
}

export type Rendered = { ok: true; text: string } | { ok: false; missing: string };

export type TemplateResult = { ok: true; template: JoinTemplate } | { ok: false; problem: string };

type Piece = { text: string } | { field: string };

const OPEN = '{{';
const CLOSE = '}}';
const TRAILING_SPACE = /[ \t\r\n]+$/;
const LEADING_SPACE = /^[ \t\r\n]+/;
// A field name as Go's lexer reads one: a letter or underscore, then letters, digits, underscores.
const FIELD = /^\.([\p{L}_][\p{L}\p{Nd}_]*)$/u;

export function parseJoinTemplate(source: string): TemplateResult {
  const pieces: Piece[] = [];
  let at = 0;
  let trimNext = false;
  while (at < source.length) {
    const open = source.indexOf(OPEN, at);
    let text = source.slice(at, open < 0 ? source.length : open);
    if (trimNext) text = text.replace(LEADING_SPACE, '');
    if (open < 0) {
      pieces.push({ text });
      break;
    }
    const action = readAction(source, open);
    if (!action.ok) return action;
    if (action.trimLeft) text = text.replace(TRAILING_SPACE, '');
    pieces.push({ text });
    if (action.field !== undefined) pieces.push({ field: action.field });
    trimNext = action.trimRight;
    at = action.end;
  }
  return { ok: true, template: compiled(pieces) };
}

type Action =
  | { ok: true; field: string | undefined; trimLeft: boolean; trimRight: boolean; end: number }
  | { ok: false; problem: string };

/** The action opening at `open`: a field reference, a comment (no field), or a refusal. */
function readAction(source: string, open: number): Action {
  let inner = open + OPEN.length;
  const trimLeft = source[inner] === '-' && isGoSpace(source[inner + 1]);
  if (trimLeft) inner += 2;
  if (source.startsWith('/*', inner)) return readComment(source, open, inner, trimLeft);
  const closing = source.indexOf(CLOSE, inner);
  if (closing < 0) return { ok: false, problem: `joinTemplate: unclosed action at offset ${open}` };
  const trimRight = closing - 2 >= inner && source[closing - 1] === '-' && isGoSpace(source[closing - 2]);
  const body = trimGoSpace(source.slice(inner, trimRight ? closing - 2 : closing));
  const end = closing + CLOSE.length;
  const field = FIELD.exec(body);
  if (!field) return { ok: false, problem: unsupported(source.slice(open, end), body) };
  return { ok: true, field: field[1] as string, trimLeft, trimRight, end };
}

/** A comment action: it must end right at the closing braces (or ` -}}`), as Go's lexer requires. */
function readComment(source: string, open: number, inner: number, trimLeft: boolean): Action {
  const close = source.indexOf('*/', inner + 2);
  if (close < 0) return { ok: false, problem: `joinTemplate: unclosed comment at offset ${open}` };
  const after = close + 2;
  const trimRight = isGoSpace(source[after]) && source[after + 1] === '-';
  const closing = trimRight ? after + 2 : after;
  if (!source.startsWith(CLOSE, closing)) {
    return { ok: false, problem: `joinTemplate: the comment at offset ${open} ends before the closing }}` };
  }
  return { ok: true, field: undefined, trimLeft, trimRight, end: closing + CLOSE.length };
}

function isGoSpace(c: string | undefined): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function trimGoSpace(text: string): string {
  return text.replace(LEADING_SPACE, '').replace(TRAILING_SPACE, '');
}

const KEYWORDS = ['if', 'else', 'end', 'range', 'with', 'define', 'template', 'block', 'break', 'continue'];

/** Why an action is refused, naming the construct. */
function unsupported(action: string, body: string): string {
  const word = /^[A-Za-z_]\w*/.exec(body)?.[0];
  const construct =
    body === ''
      ? 'an empty action'
      : body === '.'
        ? 'a reference to the whole data'
        : body.includes('|')
          ? 'a pipeline'
          : body.startsWith('$')
            ? 'a variable'
            : word && KEYWORDS.includes(word)
              ? `{{${word}}}`
              : word
                ? `a function call (${word})`
                : /^\.[^.\s]+\./.test(body)
                  ? 'a chained field'
                  : body.startsWith('.') && /\s/.test(body)
                    ? 'a method call with arguments'
                    : 'an expression other than a field';
  return `joinTemplate: ${action} is ${construct}, which Switchyard does not implement; a join template may use only literal text and {{.name}} references to the named fields`;
}

function compiled(pieces: readonly Piece[]): JoinTemplate {
  const merged = mergeText(pieces);
  const references = [...new Set(merged.flatMap((p) => ('field' in p ? [p.field] : [])))];
  return {
    references,
    render(values, present) {
      let text = '';
      for (const piece of merged) {
        if ('text' in piece) text += piece.text;
        else if (!present(piece.field)) return { ok: false, missing: piece.field };
        else text += goPrint(values[piece.field]);
      }
      return { ok: true, text };
    },
  };
}

function mergeText(pieces: readonly Piece[]): Piece[] {
  const merged: Piece[] = [];
  for (const piece of pieces) {
    const last = merged[merged.length - 1];
    if ('text' in piece && piece.text === '') continue;
    if ('text' in piece && last && 'text' in last)
      merged[merged.length - 1] = { text: last.text + piece.text };
    else merged.push(piece);
  }
  return merged;
}

// --- Go's fmt.Sprint of a value encoding/json decoded

/** What text/template prints for a field's value: "<no value>" for null, else fmt.Sprint. */
export function goPrint(value: unknown): string {
  return value === null || value === undefined ? '<no value>' : goSprint(value);
}

/** fmt's %v of a decoded JSON value; null inside a map or slice prints as <nil>. */
function goSprint(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return formatGoFloat(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(goSprint).join(' ')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort(compareUtf8);
  return `map[${keys.map((key) => `${key}:${goSprint(object[key])}`).join(' ')}]`;
}
