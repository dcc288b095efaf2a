/*
 * The language of a %%tilekernel cell: a header line, then the body in Python (the tile
 * language) or C++ (`--lang cpp`).
 *
 * The outer parser splits the cell into Header and Body nodes; parseMixed mounts the body
 * language's own parser on Body, so the body parses exactly as a Python or C++ file would (the
 * header, which is neither, never confuses it) and keeps that language's indentation and comment
 * rules. The header gets its own highlighting: the magic as meta, options as attribute names,
 * their values as strings.
 */
import { defineLanguageFacet, Language, LanguageSupport } from '@codemirror/language';
import {
  Input,
  NodeSet,
  NodeType,
  parseMixed,
  Parser,
  ParseWrapper,
  PartialParse,
  Tree,
  TreeFragment
} from '@lezer/common';
import { styleTags, tags } from '@lezer/highlight';

const NAMES = ['Cell', 'Header', 'Magic', 'Option', 'Value', 'KernelName', 'Body'] as const;
const nodeSet = new NodeSet(NAMES.map((name, id) => NodeType.define({ id, name, top: id === 0 }))).extend(
  styleTags({
    Magic: tags.meta,
    Option: tags.attributeName,
    Value: tags.string,
    KernelName: tags.definition(tags.name) // in the theme's definition colour
  })
);
const node = Object.fromEntries(nodeSet.types.map(type => [type.name, type])) as Record<
  (typeof NAMES)[number],
  NodeType
>;

// `%%tilekernel`, `--grid`, `"(ct.cdiv(n, 256),)"`, `256`: quoted values stay one token
const HEADER_TOKEN = /(%%\w+)|(--?[\w-]+)|("[^"]*"?|'[^']*'?|[^\s"']+)/g;
// The magic's options that take no value (tests/labextension checks them against the magic's)
const FLAGS = new Set(['--cpu', '--viz', '--bench', '--ncu']);

/** The header line's tokens as leaves of a Header node: a word after an option that takes one is
 * its value, any other word the kernel's name (`scale`, `"scale<float, 256>"`). */
function headerTree(text: string): Tree {
  const children: Tree[] = [];
  const positions: number[] = [];
  let valueExpected = false;
  for (const m of text.matchAll(HEADER_TOKEN)) {
    let type = node.Magic;
    if (m[2]) {
      type = node.Option;
      valueExpected = !FLAGS.has(m[2]);
    } else if (!m[1]) {
      type = valueExpected ? node.Value : node.KernelName;
      valueExpected = false;
    }
    children.push(new Tree(type, [], [], m[0].length));
    positions.push(m.index ?? 0);
  }
  return new Tree(node.Header, children, positions, text.length);
}

/** The outer parse: one pass over the cell (cells are short), no incremental reuse needed. */
class CellParse implements PartialParse {
  parsedPos: number;
  stoppedAt: number | null = null;

  constructor(
    private readonly input: Input,
    private readonly from: number,
    private readonly to: number
  ) {
    this.parsedPos = from;
  }

  advance(): Tree {
    const { from, to } = this;
    const newline = this.input.read(from, to).indexOf('\n');
    const headerEnd = newline < 0 ? to : from + newline;
    const children = [headerTree(this.input.read(from, headerEnd))];
    const positions = [0];
    if (headerEnd + 1 < to) {
      children.push(new Tree(node.Body, [], [], to - headerEnd - 1));
      positions.push(headerEnd + 1 - from);
    }
    this.parsedPos = to;
    return new Tree(node.Cell, children, positions, to - from);
  }

  stopAt(pos: number): void {
    this.stoppedAt = pos;
  }
}

class CellParser extends Parser {
  private readonly wrap: ParseWrapper;

  constructor(body: Parser) {
    super();
    this.wrap = parseMixed(ref => (ref.type === node.Body ? { parser: body } : null));
  }

  createParse(
    input: Input,
    fragments: readonly TreeFragment[],
    ranges: readonly { from: number; to: number }[]
  ): PartialParse {
    const outer = new CellParse(input, ranges[0].from, ranges[ranges.length - 1].to);
    return this.wrap(outer, input, fragments, ranges);
  }
}

/** A %%tilekernel cell language whose body is `body` (Python's or C++'s language). */
export function tileKernelLanguage(body: Language, name: string): LanguageSupport {
  const language = new Language(defineLanguageFacet(), new CellParser(body.parser), [], name);
  return new LanguageSupport(language);
}
