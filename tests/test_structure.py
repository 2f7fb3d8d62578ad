"""The package's functions stay small enough to call without a keyword map: none takes more than six
parameters.

A function's parameters are its positional-only, ordinary and keyword-only ones, a first ``self`` or
``cls`` not counted; ``*args`` and ``**kwargs`` count one each (a call may pass anything through them,
so they are no way around the limit). Every ``def``, ``async def`` and ``lambda`` under the package
is read with :mod:`ast`; a dataclass's generated ``__init__`` is not in the source, so not counted.
Values that travel together belong in a small frozen dataclass named for what they are, and a run's
config, device, environment, output folder, failure log, progress and timing in its
:class:`~trtbench.config.context.RunContext`. Nor is a parameter a packed tuple: one annotated as a
fixed-length tuple of different element types (``tuple[Path, float]``, also inside ``Optional`` or a
union) is refused, while ``tuple[X, ...]`` and coordinates of one type (``tuple[int, int]``) are fine.
Nor does a call pass a bare ``True``/``False`` by position: a flag is named at the call. Self-tests prove the checks
on snippets.
"""

from __future__ import annotations

import ast
from pathlib import Path

import trtbench

PACKAGE_DIR = Path(trtbench.__file__).parent
MAX_PARAMETERS = 6

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    """The parameters of ``node``: positional-only, ordinary and keyword-only, ``*args`` and ``**kwargs``
    one each, a first ``self`` or ``cls`` not counted."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    return len(positional) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)


def over_long(source: str, where: str, limit: int = MAX_PARAMETERS) -> list[str]:
    """``where:line name (N)`` for every function in ``source`` that takes more than ``limit`` parameters."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, FUNCTIONS):
            count = parameter_count(node)
            if count > limit:
                found.append((node.lineno, f"{where}:{node.lineno} {getattr(node, 'name', '<lambda>')} ({count})"))
    return [line for _, line in sorted(found)]


def test_no_function_takes_more_than_six_parameters():
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        found += over_long(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE_DIR.parent).as_posix())
    assert not found, (f"functions that take more than {MAX_PARAMETERS} parameters (group the ones that travel "
                       f"together, or take the RunContext):\n" + "\n".join(found))


SNIPPET = '''
def six(a, b, c, d, e, f):
    pass

def seven(a, b, c, d, e, f, g):
    pass

def keyword_only(a, b, c, *, d, e, f, g):
    pass

def variadic(a, b, c, d, e, *args, **kwargs):
    pass

class Thing:
    def method(self, a, b, c, d, e, f):
        pass

    @classmethod
    def build(cls, a, b, c, d, e, f, g):
        pass

    def positional_only(self, a, b, c, d, /, e, f, g):
        pass

async def fetch(a, b, c, d, e, f, g):
    pass

spread = lambda a, b, c, d, e, f, g: None
'''


def test_the_check_finds_every_kind_of_over_long_function():
    assert over_long(SNIPPET, "snippet.py") == [
        "snippet.py:5 seven (7)",
        "snippet.py:8 keyword_only (7)",
        "snippet.py:11 variadic (7)",
        "snippet.py:19 build (7)",
        "snippet.py:22 positional_only (7)",
        "snippet.py:25 fetch (7)",
        "snippet.py:28 <lambda> (7)",
    ]


TUPLES = ("tuple", "Tuple", "typing.Tuple")
WRAPPERS = ("Optional", "typing.Optional", "Union", "typing.Union")


def _alternatives(annotation: ast.expr) -> list[ast.expr]:
    """``annotation`` and, through ``Optional[...]``, ``Union[...]`` and ``A | B``, each type it allows."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _alternatives(ast.parse(annotation.value, mode="eval").body)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _alternatives(annotation.left) + _alternatives(annotation.right)
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in WRAPPERS:
        members = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        return [a for member in members for a in _alternatives(member)]
    return [annotation]


def is_packed(annotation: ast.expr) -> bool:
    """Whether ``annotation`` allows a fixed-length tuple whose elements are not all of one type."""
    for kind in _alternatives(annotation):
        if isinstance(kind, ast.Subscript) and ast.unparse(kind.value) in TUPLES:
            elements = kind.slice.elts if isinstance(kind.slice, ast.Tuple) else [kind.slice]
            names = [ast.unparse(e) for e in elements]
            if "..." not in names and len(set(names)) > 1:
                return True
    return False


def packed_parameters(source: str, where: str) -> list[str]:
    """``where:line function(parameter: annotation)`` for every parameter in ``source`` annotated as a packed
    tuple."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.annotation is not None and is_packed(arg.annotation):
                    found.append((node.lineno, f"{where}:{node.lineno} {node.name}({arg.arg}: "
                                               f"{ast.unparse(arg.annotation)})"))
    return [line for _, line in sorted(found)]


def test_no_parameter_is_a_packed_tuple():
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        found += packed_parameters(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE_DIR.parent).as_posix())
    assert not found, ("parameters that pack unrelated values into a tuple (name them: a frozen dataclass, or "
                       "separate parameters):\n" + "\n".join(found))


PACKED_SNIPPET = '''
def coordinates(at: tuple[int, int], shape: tuple[int, ...], inputs: tuple, key: "tuple[str, str]"):
    pass

def where(where: tuple[Path, float]):
    pass

def maybe(who: Optional[tuple[str, int]] = None):
    pass

class Engine:
    async def serve(self, hosts: "tuple[Recipe, Knobs]"):
        pass

def either(at: int | Tuple[str, int], rows: list[tuple[str, int]]):
    pass
'''


def test_the_check_finds_packed_tuples_and_passes_coordinates():
    assert packed_parameters(PACKED_SNIPPET, "snippet.py") == [
        "snippet.py:5 where(where: tuple[Path, float])",
        "snippet.py:8 maybe(who: Optional[tuple[str, int]])",
        "snippet.py:12 serve(hosts: 'tuple[Recipe, Knobs]')",
        "snippet.py:15 either(at: int | Tuple[str, int])",
    ]


# a bare True/False passed by position is refused, except to these callables of other libraries (dict.get's default,
# torch's switches), whose signatures are not this package's to change
FOREIGN_FLAG_CALLS = {"get", "inference_mode", "requires_grad_", "getattr", "setdefault", "pop"}


def positional_flags(source: str, where: str) -> list[str]:
    """``where:line call`` for every call in ``source`` that passes a bare ``True`` or ``False`` by position."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name not in FOREIGN_FLAG_CALLS and any(isinstance(a, ast.Constant) and isinstance(a.value, bool)
                                                  for a in node.args):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)[:80]}")
    return found


def test_no_call_passes_a_bare_positional_bool():
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        found += positional_flags(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE_DIR.parent).as_posix())
    assert not found, "calls that pass True/False by position (name the flag: pass it by keyword):\n" + "\n".join(found)


def test_the_check_finds_positional_flags_and_passes_keywords():
    snippet = "cast(model, 'bf16', device, False, kept)\ncast(model, channels_last=False)\nd.get('ok', False)\n"
    assert positional_flags(snippet, "s.py") == ["s.py:1 cast(model, 'bf16', device, False, kept)"]
