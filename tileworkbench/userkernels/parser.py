"""Recursive-descent parser for the C subset (docs/cupy_kernels.md lists what it accepts).

Binary operators by precedence climbing (C's precedence, left-associative, so a long sum is a
loop, not a recursion); one function per remaining level:

    conditional  := binary ('?' conditional ':' conditional)?
    unary        := ('-' | '+' | '!' | '~') unary | '(' type ')' unary | postfix
    postfix      := primary ('(' args ')' | '[' conditional ']' | '.' member '(' ')')*

Statements: declarations (`T d = x - y, e;`, local arrays `ptrdiff_t idx[] = {i / 4, i % 4};`),
type aliases (`using U = T;`, `typedef T U;`: to the end of the block, resolved while parsing),
assignments (`=`, `op=`, `++`, `--`, to a variable, a local or raw array element), `if`/`else`,
blocks, and `return` in preamble functions. Type placeholders (`T`) are type names only where
the kernel's parameter lists declare them. Nesting (parentheses, unary operators, conditionals,
blocks) stops at MAX_NESTING levels with an error at the token that goes past it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import TileSyntaxError, TileUnsupportedFeatureError
from . import syntax as s
from .cdtypes import TEMPLATES, TYPE_WORDS
from .lexer import Snippet, Token, tokenize

_BINARY_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
                  ("+", "-"), ("*", "/", "%"))
_PRECEDENCE = {op: level for level, ops in enumerate(_BINARY_LEVELS) for op in ops}
MAX_NESTING = 63          # C's minimum limit for nested parenthesized expressions and blocks
MAX_LOCAL_ARRAY = 64      # elements of a local array (each is a tile in the generated kernel)
_ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
_QUALIFIERS = ("const", "__device__", "__host__", "static", "inline", "__inline__", "__forceinline__")
# a word that starts what the subset leaves out -> the sentence's subject
_UNSUPPORTED = {"for": "Loops are", "while": "Loops are", "do": "Loops are", "switch": "Switch statements are",
                "goto": "`goto` is", "break": "`break` is", "continue": "`continue` is", "template": "Templates are",
                "struct": "Structs are", "class": "Classes are", "namespace": "Namespaces are",
                "decltype": "`decltype` is", "sizeof": "`sizeof` is", "alignof": "`alignof` is",
                "__syncthreads": "Thread synchronization is", "atomicAdd": "Atomics are"}
# CUDA's texture and surface functions: they read CUDA arrays through texture objects, which tile
# kernels (arrays in global memory) do not have
_TEXTURE_FUNCTIONS = frozenset(
    [f"tex{d}{kind}" for d in ("1D", "2D", "3D") for kind in ("", "Lod", "Grad", "Layered", "LayeredLod",
                                                             "LayeredGrad")]
    + ["tex1Dfetch", "tex2Dgather", "texCubemap", "texCubemapLayered", "texCubemapLod", "texCubemapLayeredLod"]
    + [f"surf{d}{rw}" for d in ("1D", "2D", "3D", "1DLayered", "2DLayered") for rw in ("read", "write")])


@dataclass(frozen=True)
class Types:
    """The type names a snippet may write: the kernel's placeholders, and the type aliases an
    earlier part (the preamble, `loop_prep`) declared at its top level (name -> the type's words)."""

    placeholders: frozenset = frozenset()
    aliases: tuple = ()


class Parser:
    def __init__(self, snippet: Snippet, types=frozenset()):
        types = types if isinstance(types, Types) else Types(frozenset(types))
        self.snippet = snippet
        self.tokens = tokenize(snippet)
        self.pos = 0
        self.aliases: dict[str, tuple[str, ...]] = dict(types.aliases)   # in scope: name -> the type's words
        self.type_names = types.placeholders | TYPE_WORDS | {"auto"} | set(self.aliases)
        self.placeholders = types.placeholders
        self.depth = 0

    @property
    def types(self) -> Types:
        """The type names in scope here, for a later part of the kernel."""
        return Types(self.placeholders, tuple(self.aliases.items()))

    def nested(self):
        """Enter one nesting level (left by `self.depth -= 1`); past MAX_NESTING, an error here."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"Nested more than {MAX_NESTING} levels deep (parentheses, unary operators, conditionals or "
                      f"blocks): split the expression with variables", cls=TileUnsupportedFeatureError)

    # ---- token helpers -------------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.tok.kind in ("op", "name") and self.tok.text in texts

    def advance(self) -> Token:
        tok = self.tok
        self.pos += 1
        return tok

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            self.fail(f"Expected '{text}'{what}, found {self.describe(self.tok)}")
        return self.advance()

    def fail(self, message: str, tok: Token | None = None, cls=TileSyntaxError):
        tok = tok or self.tok
        raise self.snippet.error(cls, message, tok.start, max(tok.end, tok.start + 1))

    def refuse(self, word: str):
        self.fail(f"{_UNSUPPORTED[word]} not in the supported C subset", cls=TileUnsupportedFeatureError)

    @staticmethod
    def describe(tok: Token) -> str:
        return "the end of the snippet" if tok.kind == "end" else f"'{tok.text}'"

    def at_type(self) -> bool:
        return self.tok.kind == "name" and (self.tok.text in self.type_names or self.tok.text == "const")

    # ---- types ---------------------------------------------------------------------------------

    def type_name(self) -> s.TypeName:
        start = self.tok.start
        words, end = [], start
        while self.tok.kind == "name" and (self.tok.text in self.type_names or self.tok.text in _QUALIFIERS):
            if words and self.tok.text in self.aliases:   # `typedef int F;` where F is an outer alias:
                break                                       # C makes F the name declared, not a type word
            tok = self.advance()
            end = tok.end
            if tok.text in TEMPLATES and self.at("<"):  # complex<float>: one word
                self.advance()
                argument = self.type_name()
                end = self.expect(">").end
                words.append(f"{tok.text}<{' '.join(argument.words)}>")
            elif tok.text in self.aliases:
                words.extend(self.aliases[tok.text])
                break
            elif tok.text not in _QUALIFIERS:
                words.append(tok.text)
            if words and words[-1] not in TYPE_WORDS:  # a placeholder or `auto` is a whole type name
                break
        if not words:
            if self.tok.kind == "name" and self.tok.text in _UNSUPPORTED:
                self.refuse(self.tok.text)
            self.fail(f"Expected a type name, found {self.describe(self.tok)}")
        return s.TypeName(start, end, tuple(words))

    # ---- expressions ---------------------------------------------------------------------------

    def expression(self) -> s.Node:
        return self.conditional()

    def conditional(self) -> s.Node:
        cond = self.binary(0)
        if not self.at("?"):
            return cond
        self.nested()
        self.advance()
        then = self.conditional()
        self.expect(":", " in a conditional expression")
        orelse = self.conditional()
        self.depth -= 1
        return s.Conditional(cond.start, orelse.end, cond, then, orelse)

    def binary(self, min_level: int) -> s.Node:
        left = self.unary()
        while self.tok.kind == "op" and _PRECEDENCE.get(self.tok.text, -1) >= min_level:
            op = self.advance().text
            right = self.binary(_PRECEDENCE[op] + 1)
            left = s.Binary(left.start, right.end, op, left, right)
        return left

    def unary(self) -> s.Node:
        self.nested()
        node = self.unary_unnested()
        self.depth -= 1
        return node

    def unary_unnested(self) -> s.Node:
        tok = self.tok
        if self.at("-", "+", "!", "~"):
            self.advance()
            operand = self.unary()
            return s.Unary(tok.start, operand.end, tok.text, operand)
        if self.at("++", "--"):
            self.fail(f"'{tok.text}' inside an expression is not supported: write it as its own statement",
                      cls=TileUnsupportedFeatureError)
        if self.at("(") and self.peek().kind == "name" and self.peek().text in self.type_names | {"const"}:
            self.advance()
            type_ = self.type_name()
            self.expect(")", " after the type of a cast")
            operand = self.unary()
            return s.Cast(tok.start, operand.end, type_, operand)
        return self.postfix()

    def postfix(self) -> s.Node:
        node = self.primary()
        while True:
            if self.at("("):
                if not isinstance(node, s.Name):
                    self.fail("Only named functions can be called")
                args = self.arguments()
                node = s.Call(node.start, self.tokens[self.pos - 1].end, node.id, node.end, args)
            elif self.at("["):
                if not isinstance(node, (s.Name, s.Member)):
                    self.fail("Only a raw array, a local array, or shape() or strides() of a raw array can be indexed")
                self.advance()
                index = self.expression()
                end = self.expect("]").end
                node = s.Subscript(node.start, end, node, index)
            elif self.at("."):
                node = self.member(node)
            elif self.at("::"):
                self.fail("'::' is only supported in `T::field_count` (T a type placeholder)",
                          cls=TileUnsupportedFeatureError)
            else:
                return node

    def member(self, obj: s.Node) -> s.Member | s.Field:
        dot = self.advance()
        member = self.tok
        if member.text == "at" and self.peek().text == "<" and isinstance(obj, s.Name):
            self.advance()
            self.advance()
            if self.tok.kind != "int" or not self.tok.text.isdigit():
                self.fail("Expected a field number: x.at<0>()")
            index = int(self.advance().text)
            self.expect(">", " after the field number")
            self.expect("(")
            end = self.expect(")", f" in {obj.id}.at<{index}>()").end
            return s.Field(obj.start, end, obj, index)
        allowed = ("size",) if isinstance(obj, s.Name) and obj.id == "_ind" else ("size", "shape", "strides")
        if not (isinstance(obj, s.Name) and member.text in allowed and self.peek().text == "("):
            self.fail("Member access is not supported (only _ind.size(), and size(), shape() and strides() of a raw "
                      "array)", tok=dot, cls=TileUnsupportedFeatureError)
        self.advance()
        self.expect("(")
        end = self.expect(")", f" in {obj.id}.{member.text}()").end
        return s.Member(obj.start, end, obj, member.text)

    def arguments(self) -> tuple[s.Node, ...]:
        self.expect("(")
        args = []
        if not self.at(")"):
            args.append(self.expression())
            while self.at(","):
                self.advance()
                args.append(self.expression())
        self.expect(")", " after the arguments")
        return tuple(args)

    def primary(self) -> s.Node:
        tok = self.tok
        if tok.kind in ("int", "float"):
            self.advance()
            return s.Number(tok.start, tok.end, tok.text)
        if tok.kind == "string":
            self.fail("String and character literals are not supported", cls=TileUnsupportedFeatureError)
        if self.at("("):
            self.advance()
            inner = self.expression()
            end = self.expect(")").end
            return dataclasses.replace(inner, start=tok.start, end=end)
        if tok.kind == "name" and tok.text in ("static_cast", "reinterpret_cast", "const_cast"):
            if tok.text != "static_cast":
                self.fail(f"{tok.text} is not supported (only static_cast)", cls=TileUnsupportedFeatureError)
            self.advance()
            self.expect("<")
            type_ = self.type_name()
            self.expect(">")
            self.expect("(")
            operand = self.expression()
            end = self.expect(")").end
            return s.Cast(tok.start, end, type_, operand)
        if tok.kind == "name" and tok.text in self.type_names and self.peek().text == "::":
            type_ = self.type_name()
            self.advance()
            if self.tok.text != "field_count":
                self.fail("Only `T::field_count` is supported after '::'", cls=TileUnsupportedFeatureError)
            end = self.advance().end
            return s.FieldCount(tok.start, end, type_)
        if tok.kind == "name" and tok.text in self.type_names and (self.peek().text == "(" or
                                                                   tok.text in TEMPLATES and self.peek().text == "<"):
            type_ = self.type_name()  # a functional cast: float(x), complex<float>(x), complex<float>(re, im)
            self.expect("(")
            operand = self.expression()
            imag = None
            if tok.text in TEMPLATES and self.at(","):
                self.advance()
                imag = self.expression()
            end = self.expect(")").end
            return s.Cast(tok.start, end, type_, operand, imag)
        if tok.kind == "name":
            if tok.text in _UNSUPPORTED:
                self.refuse(tok.text)
            if tok.text in self.aliases:   # C: a type name is no value (`using i = int; z = x + i;`)
                self.fail(f"'{tok.text}' names a type here (a type alias), not a value")
            if tok.text in _TEXTURE_FUNCTIONS and self.peek().text in ("(", "<"):
                self.fail(f"Texture and surface functions ({tok.text}) are not in the supported C subset: tile "
                          f"kernels read arrays, not texture objects; pass the data as an array",
                          cls=TileUnsupportedFeatureError)
            if self.peek().text == "<" and self.peek(2).text in self.type_names and (
                    self.peek(3).text == ">" or self.peek(3).text in TYPE_WORDS):   # f<float>(...), not x < T(1)
                self.fail(f"Function templates ({tok.text}<{self.peek(2).text}>) are not in the supported C "
                          f"subset", cls=TileUnsupportedFeatureError)
            self.advance()
            return s.Name(tok.start, tok.end, tok.text)
        self.fail(f"Expected an expression, found {self.describe(tok)}")

    # ---- statements ----------------------------------------------------------------------------

    def statements(self, until: str = "") -> tuple[s.Node, ...]:
        """Statements up to `until` (or the end); the last simple statement may omit its ';'."""
        body = []
        while not (self.at(until) if until else self.tok.kind == "end"):
            if self.tok.kind == "end":
                self.expect(until)
            body.append(self.statement())
        return tuple(body)

    def scoped_statements(self) -> tuple[s.Node, ...]:
        """The statements of a `{ }` block, up to its '}': the type aliases they declare end with it."""
        aliases, type_names = dict(self.aliases), self.type_names
        body = self.statements("}")
        self.aliases, self.type_names = aliases, type_names
        return body

    def end_of_statement(self):
        if self.at(";"):
            self.advance()
        elif self.tok.kind != "end":
            self.fail(f"Expected ';', found {self.describe(self.tok)}")

    def statement(self) -> s.Node:
        self.nested()
        node = self.statement_unnested()
        self.depth -= 1
        return node

    def statement_unnested(self) -> s.Node:
        tok = self.tok
        if self.at(";"):
            self.advance()
            return s.Block(tok.start, tok.end, ())
        if self.at("{"):
            self.advance()
            body = self.scoped_statements()
            end = self.advance().end
            return s.Block(tok.start, end, body)
        if self.at("if"):
            return self.if_statement()
        if self.at("static_assert"):
            return self.static_assert()
        if self.at("return"):
            self.advance()
            value = self.expression()
            self.end_of_statement()
            return s.Return(tok.start, value.end, value)
        if self.at("using", "typedef"):
            return self.alias()
        if tok.kind == "name" and tok.text in _UNSUPPORTED:
            self.refuse(tok.text)
        if self.at_type() and not (self.peek().text in ("(", "::") and self.tok.text in self.type_names):
            node = self.declaration()
        else:
            node = self.assignment()
        self.end_of_statement()
        return node

    def alias(self) -> s.Block:
        """`using X = type;` or `typedef type X;`: X names the type to the end of the enclosing
        block (an empty statement in the tree: the type words are substituted where X is written)."""
        start = self.advance()
        if start.text == "using":
            name = self.alias_name()
            self.expect("=", f" after 'using {name.text}'")
            type_ = self.type_name()
        else:
            type_ = self.type_name()
            name = self.alias_name()
        if type_.words == ("auto",):
            self.fail("`auto` cannot be aliased: name the type", name)
        self.expect(";", " after the type alias")
        self.aliases[name.text] = type_.words
        self.type_names = self.type_names | {name.text}
        return s.Block(start.start, name.end, ())

    def alias_name(self) -> Token:
        if self.tok.kind == "name" and self.tok.text in _UNSUPPORTED:   # `using namespace std;`
            self.refuse(self.tok.text)
        taken = self.tok.text in self.type_names and self.tok.text not in self.aliases   # (an alias may be shadowed)
        if self.tok.kind != "name" or taken:
            self.fail(f"Expected the name of the type alias, found {self.describe(self.tok)}")
        return self.advance()

    def static_assert(self) -> s.StaticAssert:
        start = self.advance().start
        self.expect("(", " after 'static_assert'")
        cond = self.expression()
        message = None
        if self.at(","):
            self.advance()
            if self.tok.kind != "string" or not self.tok.text.startswith('"'):
                self.fail("Expected the message string of static_assert")
            message = self.advance().text[1:-1]
        end = self.expect(")", " after the static_assert").end
        self.end_of_statement()
        return s.StaticAssert(start, end, cond, message)

    def if_statement(self) -> s.If:
        start = self.advance().start
        self.expect("(", " after 'if'")
        cond = self.expression()
        self.expect(")", " after the condition")
        then = self.branch()
        orelse = ()
        if self.at("else"):
            self.advance()
            orelse = self.branch()
        end = self.tokens[self.pos - 1].end
        return s.If(start, end, cond, then, orelse)

    def branch(self) -> tuple[s.Node, ...]:
        node = self.statement()
        return node.body if isinstance(node, s.Block) else (node,)

    def declaration(self, type_: s.TypeName | None = None) -> s.Declaration:
        type_ = type_ or self.type_name()
        names = []
        while True:
            if self.tok.kind != "name":
                self.fail(f"Expected a variable name, found {self.describe(self.tok)}")
            name_tok = self.advance()
            name = s.Name(name_tok.start, name_tok.end, name_tok.text)
            array, length = self.at("["), None
            if array:
                self.advance()
                length = None if self.at("]") else self.expression()
                self.expect("]", " after the length of the array")
            init = None
            if self.at("="):
                self.advance()
                init = self.init_list() if array else self.expression()
            elif array and length is None:
                self.fail("A local array needs a length or an initializer list")
            end = self.tokens[self.pos - 1].end
            names.append(s.Declarator(name.start, end, name, init, array, length))
            if not self.at(","):
                break
            self.advance()
        end = self.tokens[self.pos - 1].end
        return s.Declaration(type_.start, end, type_, tuple(names))

    def init_list(self) -> s.InitList:
        start = self.expect("{", " to open the array's initializer list").start
        items = []
        while not self.at("}"):
            items.append(self.expression())
            if len(items) > MAX_LOCAL_ARRAY:
                self.fail(f"Local arrays are limited to {MAX_LOCAL_ARRAY} elements", cls=TileUnsupportedFeatureError)
            if not self.at("}"):
                self.expect(",", " between the elements")
        end = self.advance().end
        return s.InitList(start, end, tuple(items))

    def assignment(self) -> s.Assign:
        start_tok = self.tok
        if self.at("++", "--"):
            op = self.advance().text
            target = self.postfix()
            self.check_target(target, start_tok)
            return s.Assign(start_tok.start, target.end, target, op, None)
        target = self.expression()
        if self.at("++", "--"):
            end = self.advance()
            self.check_target(target, start_tok)
            return s.Assign(target.start, end.end, target, end.text, None)
        if not (self.tok.kind == "op" and self.tok.text in _ASSIGN_OPS):
            if isinstance(target, s.Name) and self.tok.kind == "name":
                raise self.snippet.error(TileSyntaxError, f"Unknown type '{target.id}' (a placeholder must appear "
                                         f"in the parameter lists)", target.start, target.end)
            if self.tok.kind == "end" or self.at(";"):
                raise self.snippet.error(TileSyntaxError, "This statement has no effect: a statement assigns a "
                                         "variable or an output", target.start, target.end)
            self.fail(f"Expected an assignment, found {self.describe(self.tok)}")
        op = self.advance().text
        self.check_target(target, start_tok)
        value = self.expression()
        return s.Assign(target.start, value.end, target, op, value)

    def check_target(self, target: s.Node, tok: Token):
        if not (isinstance(target, (s.Name, s.Field)) or isinstance(target, s.Subscript)
                and isinstance(target.array, s.Name)):
            raise self.snippet.error(TileSyntaxError, "Only a variable, an output or an array element can be "
                                     "assigned", target.start, target.end)

    # ---- the preamble --------------------------------------------------------------------------

    def preamble(self) -> tuple[s.Node, ...]:
        """`__device__` functions and `const` variables."""
        items = []
        while self.tok.kind != "end":
            if self.at("template"):
                self.refuse("template")
            if self.at("using", "typedef"):
                self.alias()
                continue
            type_ = self.type_name()
            if self.tok.kind == "name" and self.peek().text == "(":
                items.append(self.function(type_))
            else:
                items.append(self.declaration(type_))
                self.expect(";")
        return tuple(items)

    def function(self, return_type: s.TypeName) -> s.Function:
        name_tok = self.advance()
        self.expect("(")
        params = []
        while not self.at(")"):
            type_ = self.type_name()
            if self.at("&", "*"):
                self.fail("Reference and pointer parameters are not supported: pass values",
                          cls=TileUnsupportedFeatureError)
            if self.tok.kind != "name":
                self.fail(f"Expected a parameter name, found {self.describe(self.tok)}")
            tok = self.advance()
            params.append((type_, s.Name(tok.start, tok.end, tok.text)))
            if not self.at(")"):
                self.expect(",")
        self.advance()
        self.expect("{", " to open the function body")
        body = self.scoped_statements()
        end = self.advance().end
        return s.Function(return_type.start, end, return_type, s.Name(name_tok.start, name_tok.end, name_tok.text),
                          tuple(params), body)


def parse_statements(snippet: Snippet, types=frozenset()) -> tuple[s.Node, ...]:
    """The statements of a snippet; `types`: the placeholders (a set) or a Types."""
    return Parser(snippet, types).statements()


def parse_declarations(snippet: Snippet, types=frozenset(), preamble: bool = False) -> tuple[tuple, Types]:
    """The statements (or with `preamble`, the functions and constants) of a part whose type
    aliases the later parts see, and the Types those parts parse with."""
    parser = Parser(snippet, types)
    return (parser.preamble() if preamble else parser.statements()), parser.types


def parse_expression(snippet: Snippet, types=frozenset()) -> s.Node:
    parser = Parser(snippet, types)
    node = parser.expression()
    if parser.tok.kind != "end":
        parser.fail(f"Unexpected {parser.describe(parser.tok)} after the expression")
    return node
