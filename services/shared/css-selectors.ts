/**
 * CSS selectors checked without a browser, so the api refuses a selector no page can take
 * before anything is stored or spent (a configuration's options, a snap's): the grammar of a
 * selector list as document.querySelector reads it (CSS Syntax 3 tokens, Selectors 4). It is
 * lenient where the browser decides by name: any pseudo-class or pseudo-element name passes,
 * and a functional one's arguments are only checked to be balanced. What passes here and the
 * browser still refuses (`:nosuch`) is refused by the capture's own check in the page
 * (overlays.ts, wait_for, the capture rules), with the same note. Why not a parser from npm:
 * docs/decisions/2026-11-30-selector-syntax-without-a-browser.md.
 */

/** The options whose value is a CSS selector, or a list of them (hide_selectors, remove_selectors). */
export const SELECTOR_OPTIONS = [
  'selectors',
  'wait_for',
  'hide_selectors',
  'remove_selectors',
  'fail_if_selector_missing',
  'fail_if_selector_present',
] as const;

/** The note for a selector the browser cannot take: the same words as the capture's check in the page. */
export function invalidSelectorNote(option: string, selector: string, reason: string): string {
  return `${option}: ${JSON.stringify(selector)} is not a valid CSS selector (${reason}); give CSS selectors such as "#newsletter" or ".modal, .popup".`;
}

type Token =
  | { kind: 'ws' | '[' | ']' | '(' | ')' | ',' | ':' | 'string' | 'number'; at: number }
  | { kind: 'ident' | 'function'; at: number; name: string }
  | { kind: 'hash'; at: number; id: boolean }
  | { kind: 'delim'; at: number; char: string };

class SelectorError extends Error {}
const fail = (reason: string): never => {
  throw new SelectorError(reason);
};

const WS = /[ \t\n\r\f]/;
const isNameStart = (c: string | undefined) => c !== undefined && (/[A-Za-z_]/.test(c) || c.charCodeAt(0) >= 0x80);
const isName = (c: string | undefined) => isNameStart(c) || (c !== undefined && /[0-9-]/.test(c));
const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** CSS Syntax 3's tokens of a selector (comments dropped); a string broken by a new line is refused. */
function tokens(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const escapeAt = (j: number) => s[j] === '\\' && s[j + 1] !== '\n' && s[j + 1] !== '\r' && s[j + 1] !== '\f';
  const startsIdent = (j: number) => (s[j] === '-' ? isNameStart(s[j + 1]) || s[j + 1] === '-' || escapeAt(j + 1) : isNameStart(s[j]) || escapeAt(j));
  const startsNumber = (j: number) =>
    isDigit(s[j]) || (s[j] === '.' && isDigit(s[j + 1])) || ((s[j] === '+' || s[j] === '-') && (isDigit(s[j + 1]) || (s[j + 1] === '.' && isDigit(s[j + 2]))));
  /** Consumes a name (letters, digits, '-', '_', escapes) from i; answers it. */
  const name = (): string => {
    const from = i;
    for (;;) {
      if (isName(s[i])) i++;
      else if (escapeAt(i)) {
        i++;
        if (/[0-9A-Fa-f]/.test(s[i] ?? '')) {
          let n = 0;
          while (n < 6 && /[0-9A-Fa-f]/.test(s[i] ?? '')) {
            i++;
            n++;
          }
          if (WS.test(s[i] ?? '')) i++;
        } else if (i < s.length) i++;
      } else return s.slice(from, i);
    }
  };
  while (i < s.length) {
    const at = i;
    const c = s[i] as string;
    if (WS.test(c)) {
      while (WS.test(s[i] ?? '')) i++;
      out.push({ kind: 'ws', at });
    } else if (c === '/' && s[i + 1] === '*') {
      const end = s.indexOf('*/', i + 2);
      i = end < 0 ? s.length : end + 2;
    } else if (c === '"' || c === "'") {
      i++;
      while (i < s.length && s[i] !== c) {
        if (s[i] === '\n' || s[i] === '\r' || s[i] === '\f') fail(`the string that starts at character ${at + 1} breaks at a new line`);
        i += s[i] === '\\' ? 2 : 1;
      }
      // A string still open at the end is closed by it, as CSS reads it.
      i++;
      out.push({ kind: 'string', at });
    } else if (c === '#' && (isName(s[i + 1]) || escapeAt(i + 1))) {
      i++;
      const id = startsIdent(i);
      name();
      out.push({ kind: 'hash', at, id });
    } else if (startsNumber(i)) {
      i++;
      while (isDigit(s[i]) || (s[i] === '.' && isDigit(s[i + 1]))) i++;
      if (/[eE]/.test(s[i] ?? '') && (isDigit(s[i + 1]) || (/[+-]/.test(s[i + 1] ?? '') && isDigit(s[i + 2])))) {
        i += 2;
        while (isDigit(s[i])) i++;
      }
      if (startsIdent(i)) name();
      else if (s[i] === '%') i++;
      out.push({ kind: 'number', at });
    } else if (startsIdent(i)) {
      const n = name();
      if (s[i] === '(') {
        i++;
        out.push({ kind: 'function', at, name: n });
      } else out.push({ kind: 'ident', at, name: n });
    } else if ('[]():,'.includes(c)) {
      i++;
      out.push({ kind: c as '[' | ']' | '(' | ')' | ':' | ',', at });
    } else {
      i++;
      out.push({ kind: 'delim', at, char: c });
    }
  }
  return out;
}

/** A page's selectors declare no namespace prefix: only `*|` and `|` are taken. */
const NO_NAMESPACES = (prefix: string) => `the namespace "${prefix}|" is not declared (a page's selectors know none; *| and | are taken)`;

/** What a token is, for a reason. */
function shown(s: string, t: Token | undefined): string {
  if (!t) return 'the end';
  if (t.kind === 'ws') return 'a space';
  return `"${s.slice(t.at, t.at + 20).split(/[ \t\n\r\f]/)[0]}" at character ${t.at + 1}`;
}

/** Reads one selector list; throws SelectorError with the reason. */
class Reader {
  private i = 0;
  constructor(
    private readonly s: string,
    private readonly t: Token[],
  ) {}

  private peek(k = 0): Token | undefined {
    return this.t[this.i + k];
  }
  private skipWs(): void {
    while (this.peek()?.kind === 'ws') this.i++;
  }
  private isDelim(t: Token | undefined, chars: string): t is Token & { kind: 'delim'; char: string } {
    return t?.kind === 'delim' && chars.includes(t.char);
  }

  list(): void {
    for (;;) {
      this.skipWs();
      if (!this.peek() || this.peek()?.kind === ',') fail('a selector of the list is empty: a comma with nothing before or after it');
      this.complex();
      const next = this.peek();
      if (!next) return;
      if (next.kind !== ',') fail(`${shown(this.s, next)} is not expected there`);
      this.i++;
    }
  }

  private complex(): void {
    this.compound();
    for (;;) {
      const hadWs = this.peek()?.kind === 'ws';
      this.skipWs();
      const next = this.peek();
      if (!next || next.kind === ',') return;
      if (this.isDelim(next, '>+~')) {
        this.i++;
        this.skipWs();
        const after = this.peek();
        if (!after || after.kind === ',') fail(`nothing follows the combinator "${next.char}"`);
        this.compound();
      } else if (hadWs) this.compound();
      else fail(`${shown(this.s, next)} is not expected there`);
    }
  }

  /** A type (or *, with a namespace) and its ids, classes, attributes and pseudo-classes. */
  private compound(): void {
    const start = this.i;
    this.typeSelector();
    for (;;) {
      const t = this.peek();
      if (t?.kind === 'hash') {
        if (!t.id) fail(`${shown(this.s, t)} is not an id: an id starts with a letter, "_" or "-" (escape a digit, as #\\31 0)`);
        this.i++;
      } else if (this.isDelim(t, '.')) {
        this.i++;
        if (this.peek()?.kind !== 'ident') fail(`a class name must follow the "." at character ${t.at + 1}`);
        this.i++;
      } else if (t?.kind === '[') this.attribute();
      else if (t?.kind === ':') this.pseudo();
      else break;
    }
    if (this.i === start) {
      const t = this.peek();
      fail(t && this.isDelim(t, '>+~') ? `the combinator "${t.char}" has no selector before it` : `${shown(this.s, t)} does not start a selector`);
    }
  }

  /** `div`, `*`, `ns|div`, `*|*`, `|div`: answers whether one was read. */
  private typeSelector(): void {
    const t = this.peek();
    const name = (x: Token | undefined) => x?.kind === 'ident' || this.isDelim(x, '*');
    if (name(t)) {
      this.i++;
      if (this.isDelim(this.peek(), '|') && !this.isDelim(this.peek(1), '=')) {
        if (t?.kind === 'ident') fail(NO_NAMESPACES(t.name));
        this.i++;
        if (!name(this.peek())) fail(`a name must follow the namespace's "|" at character ${(this.t[this.i - 1] as Token).at + 1}`);
        this.i++;
      }
    } else if (this.isDelim(t, '|') && name(this.peek(1))) this.i += 2;
  }

  /** [name], [name=value i], with a namespace prefix or not. */
  private attribute(): void {
    const open = this.peek() as Token;
    const end = this.closing(this.i);
    this.i++;
    const inside = () => this.i < end;
    this.skipWs();
    const t = this.peek();
    if (this.isDelim(t, '|')) this.i++;
    else if ((t?.kind === 'ident' || this.isDelim(t, '*')) && this.isDelim(this.peek(1), '|') && !this.isDelim(this.peek(2), '=')) {
      if (t?.kind === 'ident') fail(NO_NAMESPACES(t.name));
      this.i += 2;
    }
    if (!inside() || this.peek()?.kind !== 'ident') {
      fail(`the attribute selector at character ${open.at + 1} needs an attribute name, as in [data-id] or [type="text"]`);
    }
    this.i++;
    this.skipWs();
    if (inside()) {
      const m = this.peek();
      if (this.isDelim(m, '=')) this.i++;
      else if (this.isDelim(m, '~|^$*') && this.isDelim(this.peek(1), '=')) this.i += 2;
      else fail(`${shown(this.s, m)} is not an attribute matcher (=, ~=, |=, ^=, $=, *=)`);
      this.skipWs();
      const v = this.peek();
      if (!inside() || (v?.kind !== 'ident' && v?.kind !== 'string')) {
        fail(`the value of the attribute selector at character ${open.at + 1} must be a name or a quoted string, as in [data-id="1"]`);
      }
      this.i++;
      this.skipWs();
      const flag = this.peek();
      if (inside() && flag?.kind === 'ident' && /^[is]$/i.test(flag.name)) {
        this.i++;
        this.skipWs();
      }
      if (inside()) fail(`${shown(this.s, this.peek())} is not expected in the attribute selector at character ${open.at + 1}`);
    }
    this.i = end + 1;
  }

  /** :hover, :nth-child(2n+1), ::before: any name; a function's arguments balanced. */
  private pseudo(): void {
    const colon = this.peek() as Token;
    this.i++;
    if (this.peek()?.kind === ':') this.i++;
    const t = this.peek();
    if (t?.kind === 'ident') this.i++;
    else if (t?.kind === 'function') this.i = this.closing(this.i) + 1;
    else fail(`a pseudo-class name must follow the ":" at character ${colon.at + 1}`);
  }

  /**
   * The index of the token that closes the block opened at `from` (a function token opens a "("
   * block); a block still open at the end is closed by it, as CSS reads it (the token count then).
   */
  private closing(from: number): number {
    const stack: string[] = [];
    for (let j = from; j < this.t.length; j++) {
      const k = (this.t[j] as Token).kind;
      if (k === '[' || k === '(' || k === 'function') stack.push(k === '[' ? ']' : ')');
      else if (k === ']' || k === ')') {
        if (stack.pop() !== k) fail(`the "${k}" at character ${(this.t[j] as Token).at + 1} closes nothing`);
        if (stack.length === 0) return j;
      }
    }
    return this.t.length;
  }
}

/** Why the browser cannot take `selector` as a selector list, or null when its syntax reads. */
export function selectorProblem(selector: string): string | null {
  try {
    new Reader(selector, tokens(selector)).list();
    return null;
  } catch (err) {
    if (err instanceof SelectorError) return err.message;
    throw err;
  }
}
