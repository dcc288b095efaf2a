"""The elementwise math functions, one row each: the op (ir/ops.py) and a float64 NumPy reference
on a domain. The tile function (`ct.log1p`) and CUDA's spellings in CuPy-style kernels (`log1p`,
`log1pf`) are compared with the reference on the interpreter (tests/interp/test_math_functions.py),
compiled with NVRTC (tests/codegen/test_math_functions_compile.py) and run on a GPU
(tests/gpu/test_math_functions.py). Adding a math function to the op table needs a row here."""
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tileworkbench.ir.ops import OPS


def _per_element(f):
    return np.vectorize(f, otypes=[np.float64])


@dataclass(frozen=True)
class MathCase:
    name: str                   # the op
    reference: Callable         # float64 arrays -> float64 array
    low: float                  # operands drawn from [low, high], plus `points`
    high: float
    points: tuple = ()

    @property
    def arity(self) -> int:
        return OPS[self.name].arity

    @property
    def stub(self) -> str:
        return OPS[self.name].stub

    def operands(self, dtype, n=256):
        rng = np.random.default_rng(len(self.name))
        return tuple(np.concatenate([rng.uniform(self.low, self.high, n - len(self.points)), self.points]).astype(dtype)
                     for _ in range(self.arity))

    def expected(self, operands):
        return self.reference(*(x.astype(np.float64) for x in operands))


MATH = [
    MathCase("exp", np.exp, -20, 20),
    MathCase("exp2", np.exp2, -20, 20),
    MathCase("expm1", np.expm1, -2, 2, (1e-7, -3e-8, 1e-30)),
    MathCase("log", np.log, 1e-3, 1e3),
    MathCase("log2", np.log2, 1e-3, 1e3),
    MathCase("log1p", np.log1p, -0.99, 10, (1e-7, -3e-8, 1e-30)),
    MathCase("sqrt", np.sqrt, 0, 1e3),
    MathCase("rsqrt", lambda x: 1 / np.sqrt(x), 1e-3, 1e3),
    MathCase("cbrt", np.cbrt, -1e3, 1e3, (-8.0, 27.0, 0.125)),
    MathCase("sin", np.sin, -3, 3),
    MathCase("cos", np.cos, -3, 3),
    MathCase("tan", np.tan, -1.4, 1.4),
    MathCase("sinh", np.sinh, -5, 5),
    MathCase("cosh", np.cosh, -5, 5),
    MathCase("tanh", np.tanh, -5, 5),
    MathCase("erf", _per_element(math.erf), -3, 3),
    MathCase("erfc", _per_element(math.erfc), -3, 9),
    MathCase("atan2", np.arctan2, -10, 10),
    MathCase("hypot", np.hypot, -1e3, 1e3),
]


def tolerance(dtype) -> float:
    """Relative: 16 units in the last place (CUDA's float32 functions are within 4, NumPy's too)."""
    return 16 * float(np.finfo(dtype).eps)


def cupy_kernel(module, spelling: str, arity: int, ctype: str):
    """An ElementwiseKernel of `module` (tileworkbench or cupy) that calls C's `spelling`."""
    params = ", ".join(f"{ctype} x{k}" for k in range(arity))
    call = f"{spelling}({', '.join(f'x{k}' for k in range(arity))})"
    return module.ElementwiseKernel(params, f"{ctype} y", f"y = {call}", f"math_{spelling}")


def spellings(case: MathCase):
    """(C name, C type of its operands and result): expf on float, exp on float and double."""
    double, *single = OPS[case.name].c
    return [(double, "float64"), (double, "float32")] + [(name, "float32") for name in single]


def every_function_kernel():
    """A tile kernel that applies every row's function (for one compile that covers them all):
    row k of `out` is function k of x (and y)."""
    import tileworkbench.tile as ct
    functions = tuple(getattr(ct, c.stub) for c in MATH)
    arities = tuple(c.arity for c in MATH)

    @ct.kernel
    def every_math_function(x, y, out):
        a, b = ct.load(x, (0,), (256,)), ct.load(y, (0,), (256,))
        for k in ct.static_iter(range(len(functions))):
            r = functions[k](a) if arities[k] == 1 else functions[k](a, b)
            ct.store(out, (k, 0), r.reshape((1, 256)))
    return every_math_function


def every_spelling_kernel(module, ctype: str):
    """A CuPy-style kernel whose outputs are every C spelling of `ctype`'s functions of x (and z),
    and the (spelling, row) of each output."""
    calls = [(name, case) for case in MATH for name, t in spellings(case) if t == ctype]
    body = "; ".join(f"y{k} = {name}({'x, z' if case.arity == 2 else 'x'})" for k, (name, case) in enumerate(calls))
    outputs = ", ".join(f"{ctype} y{k}" for k in range(len(calls)))
    return module.ElementwiseKernel(f"{ctype} x, {ctype} z", outputs, body, f"every_{ctype}_spelling"), calls
