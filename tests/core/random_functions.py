"""Small random ``torch.autograd.Function``s with hand-written backwards, correct or mutated.

A :class:`Program` is a chain of ops on a running value ``h`` that starts as the input ``x``;
binary ops combine ``h`` with a second input ``y``. Each op knows its forward and its own
vector-Jacobian product (micrograd-style), so the backward of the whole Function is the chain
of VJPs in reverse. A :class:`Mutation` breaks one link of that chain the way people do by hand:
a dropped term, a flipped sign, a transposed gradient, a wrong constant, a forgotten
``grad_output``. :func:`make_function` turns both into an ordinary Function subclass.

The Hypothesis strategies at the bottom draw programs whose values stay bounded (so central
differences stay accurate) and away from kinks (no abs or relu), in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from hypothesis import strategies as st

Shape = tuple[int, ...]

MAX_NUMEL = 24  # elements per input and per intermediate value
MAX_OPS = 5
INPUT_BOUND = 1.5  # inputs are uniform in [-INPUT_BOUND, INPUT_BOUND]
VALUE_BOUND = 20.0  # no intermediate may exceed this in absolute value


def numel(shape: Shape) -> int:
    return math.prod(shape)


def is_square(shape: Shape) -> bool:
    return len(shape) == 2 and shape[0] == shape[1] and shape[0] > 1


# ---------------------------------------------------------------------------------------------
# Ops: forward, VJP, and how far they can push the values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One step ``h -> out``. ``vjp`` returns ``(grad wrt h, grad wrt y or None)``."""

    in_shape: Shape
    out_shape: Shape

    terms: tuple[str, ...] = field(default=(), init=False)  # parts of the VJP a mutation may drop
    uses_y: bool = field(default=False, init=False)

    def text(self) -> str:
        raise NotImplementedError

    def forward(self, h: torch.Tensor, y: torch.Tensor | None) -> tuple[torch.Tensor, tuple]:
        """The output and the tensors backward needs."""
        raise NotImplementedError

    def vjp(self, g: torch.Tensor, saved: tuple, drop: str | None = None) -> tuple:
        raise NotImplementedError


@dataclass(frozen=True)
class Elementwise(Op):
    """``out = f(h)``; backward is ``g * f'(h)``, written from the saved input and output."""

    name: str = ""
    f: Callable = field(default=None, compare=False, repr=False)
    df: Callable = field(default=None, compare=False, repr=False)  # f'(h) from (h, out)

    def text(self) -> str:
        return f"h = {self.name}"

    def forward(self, h, y):
        out = self.f(h)
        return out, (h, out)

    def vjp(self, g, saved, drop=None):
        h, out = saved
        return g * self.df(h, out), None


@dataclass(frozen=True)
class TimesSin(Op):
    """``out = h * sin(h)``: a product rule with two terms, ``sin(h) + h cos(h)``."""

    terms: tuple[str, ...] = field(default=("sin(h)", "h*cos(h)"), init=False)

    def text(self) -> str:
        return "h = h * sin(h)"

    def forward(self, h, y):
        return h * torch.sin(h), (h,)

    def vjp(self, g, saved, drop=None):
        (h,) = saved
        d_sin_term = torch.sin(h) if drop != "sin(h)" else torch.zeros_like(h)
        d_cos_term = h * torch.cos(h) if drop != "h*cos(h)" else torch.zeros_like(h)
        return g * (d_sin_term + d_cos_term), None


@dataclass(frozen=True)
class Reduce(Op):
    """``h.sum(dim)`` or ``h.mean(dim)``; ``dim=None`` reduces everything to a 0-d tensor."""

    how: str = "sum"  # "sum" or "mean"
    dim: int | None = None
    keepdim: bool = False

    def text(self) -> str:
        if self.dim is None:
            return f"h = h.{self.how}()"
        return f"h = h.{self.how}(dim={self.dim}, keepdim={self.keepdim})"

    def forward(self, h, y):
        reduce = torch.sum if self.how == "sum" else torch.mean
        out = reduce(h) if self.dim is None else reduce(h, dim=self.dim, keepdim=self.keepdim)
        return out, ()

    def vjp(self, g, saved, drop=None):
        # every input element of a group gets the group's gradient (divided by the count for a mean)
        if self.dim is not None and not self.keepdim:
            g = g.unsqueeze(self.dim)
        count = numel(self.in_shape) if self.dim is None else self.in_shape[self.dim]
        grad = g.expand(self.in_shape)
        return (grad / count if self.how == "mean" else grad), None


@dataclass(frozen=True)
class Transpose(Op):
    def text(self) -> str:
        return "h = h.t()"

    def forward(self, h, y):
        return h.t(), ()

    def vjp(self, g, saved, drop=None):
        return g.t(), None


@dataclass(frozen=True)
class Reshape(Op):
    def text(self) -> str:
        return f"h = h.reshape{self.out_shape}"

    def forward(self, h, y):
        return h.reshape(self.out_shape), ()

    def vjp(self, g, saved, drop=None):
        return g.reshape(self.in_shape), None


@dataclass(frozen=True)
class DropFirstRow(Op):
    """``h[1:]``: the dropped row gets a zero gradient."""

    def text(self) -> str:
        return "h = h[1:]"

    def forward(self, h, y):
        return h[1:], ()

    def vjp(self, g, saved, drop=None):
        return torch.cat([g.new_zeros((1, *self.in_shape[1:])), g]), None


@dataclass(frozen=True)
class Unsqueeze(Op):
    dim: int = 0

    def text(self) -> str:
        return f"h = h.unsqueeze({self.dim})"

    def forward(self, h, y):
        return h.unsqueeze(self.dim), ()

    def vjp(self, g, saved, drop=None):
        return g.squeeze(self.dim), None


@dataclass(frozen=True)
class Flip(Op):
    dims: tuple[int, ...] = (0,)

    def text(self) -> str:
        return f"h = h.flip({self.dims})"

    def forward(self, h, y):
        return h.flip(self.dims), ()

    def vjp(self, g, saved, drop=None):
        return g.flip(self.dims), None


@dataclass(frozen=True)
class Binary(Op):
    """``h * y`` or ``h + y`` with broadcasting: each gradient is summed back to its input's shape."""

    how: str = "mul"  # "mul" or "add"
    y_shape: Shape = ()

    terms: tuple[str, ...] = field(default=("h", "y"), init=False)
    uses_y: bool = field(default=True, init=False)

    def text(self) -> str:
        return f"h = h {'*' if self.how == 'mul' else '+'} y"

    def forward(self, h, y):
        if self.how == "mul":
            return h * y, (h, y)
        return h + y, ()

    def vjp(self, g, saved, drop=None):
        if self.how == "mul":
            h, y = saved
            grad_h, grad_y = g * y, g * h  # d(hy)/dh = y, d(hy)/dy = h
        else:
            grad_h, grad_y = g, g
        grad_h = grad_h.sum_to_size(self.in_shape) if drop != "h" else g.new_zeros(self.in_shape)
        grad_y = grad_y.sum_to_size(self.y_shape) if drop != "y" else None
        return grad_h, grad_y


@dataclass(frozen=True)
class MatMul(Op):
    """``h @ y`` for 1-D or 2-D operands: ``dL/dA = G Bᵀ``, ``dL/dB = Aᵀ G`` on 2-D views."""

    y_shape: Shape = ()

    terms: tuple[str, ...] = field(default=("h", "y"), init=False)
    uses_y: bool = field(default=True, init=False)

    def text(self) -> str:
        return "h = h @ y"

    def forward(self, h, y):
        return h @ y, (h, y)

    def vjp(self, g, saved, drop=None):
        h, y = saved
        a = h.reshape(1, -1) if h.dim() == 1 else h  # a row vector
        b = y.reshape(-1, 1) if y.dim() == 1 else y  # a column vector
        g2 = g.reshape(a.shape[0], b.shape[1])
        grad_h = (g2 @ b.t()).reshape(self.in_shape) if drop != "h" else g.new_zeros(self.in_shape)
        grad_y = (a.t() @ g2).reshape(self.y_shape) if drop != "y" else None
        return grad_h, grad_y


# f, f'(h, out), and a bound on |f| given a bound b on |h| (None: too large, not drawn)
ELEMENTWISE: dict[str, tuple[Callable, Callable, Callable[[float], float]]] = {
    "sin(h)": (torch.sin, lambda h, out: torch.cos(h), lambda b: min(b, 1.0)),
    "cos(h)": (torch.cos, lambda h, out: -torch.sin(h), lambda b: 1.0),
    "exp(h)": (torch.exp, lambda h, out: out, math.exp),
    "tanh(h)": (torch.tanh, lambda h, out: 1 - out**2, lambda b: min(b, 1.0)),
    "sigmoid(h)": (torch.sigmoid, lambda h, out: out * (1 - out), lambda b: 1.0),
    "h**2": (torch.square, lambda h, out: 2 * h, lambda b: b * b),
    "softplus(h)": (
        torch.nn.functional.softplus,
        lambda h, out: torch.sigmoid(h),
        lambda b: b + math.log(2),
    ),
    "h * 3.0": (lambda h: h * 3.0, lambda h, out: torch.full_like(h, 3.0), lambda b: 3 * b),
    "h * -0.5": (lambda h: h * -0.5, lambda h, out: torch.full_like(h, -0.5), lambda b: 0.5 * b),
    "h + 0.7": (lambda h: h + 0.7, lambda h, out: torch.ones_like(h), lambda b: b + 0.7),
}


def elementwise(name: str, shape: Shape) -> Elementwise:
    f, df, _ = ELEMENTWISE[name]
    return Elementwise(shape, shape, name=name, f=f, df=df)


# ---------------------------------------------------------------------------------------------
# Programs, mutations and the Function built from them
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    """One slip in the backward: at op ``step`` (or, for input grads, at the return)."""

    kind: str  # see MUTATION_KINDS
    step: int | None = None
    term: str | None = None  # drop_term: which term; transpose: "h" or "y"
    factor: float | None = None  # scale

    def text(self) -> str:
        where = f" at step {self.step}" if self.step is not None else ""
        extra = f" term={self.term!r}" if self.term else ""
        extra += f" factor={self.factor}" if self.factor is not None else ""
        return f"{self.kind}{where}{extra}"


MUTATION_KINDS = (
    "drop_term",  # one half of a product rule, or one operand's gradient of a binary op
    "flip_sign",  # the VJP of one op negated
    "transpose",  # a square 2-D gradient transposed
    "scale",  # the VJP of one op times a wrong constant
    "forget_grad_output",  # one op's VJP computed with ones instead of the incoming gradient
    "drop_input_grad",  # backward returns None for y although y is used
    "spurious_input_grad",  # backward returns ones for y although y is unused
)
OP_KINDS = ("Elementwise", "TimesSin", "Reduce", "Transpose", "Reshape", "DropFirstRow", "Unsqueeze", "Flip")
OP_KINDS += ("Binary", "MatMul")
SCALE_FACTORS = (2.0, 0.5, 1.01, 1.0005)  # 1.0005 is inside rtol=1e-3: often a no-op


@dataclass(frozen=True)
class Program:
    x_shape: Shape
    y_shape: Shape | None  # None: a one-input Function
    ops: tuple[Op, ...]
    seed: int = 0

    @property
    def uses_y(self) -> bool:
        return any(op.uses_y for op in self.ops)

    @property
    def out_shape(self) -> Shape:
        return self.ops[-1].out_shape

    def inputs(self) -> tuple[torch.Tensor, ...]:
        """Uniform values in [-INPUT_BOUND, INPUT_BOUND], float64, from the program's seed."""
        gen = torch.Generator().manual_seed(self.seed)
        shapes = [self.x_shape] if self.y_shape is None else [self.x_shape, self.y_shape]
        return tuple(
            ((torch.rand(s, generator=gen, dtype=torch.float64) * 2 - 1) * INPUT_BOUND).requires_grad_()
            for s in shapes
        )

    def names(self) -> list[str]:
        return ["x"] if self.y_shape is None else ["x", "y"]

    def mutations(self) -> list[Mutation]:
        """Every mutation that makes sense for this program."""
        found = []
        for k, op in enumerate(self.ops):
            found += [Mutation("flip_sign", k), Mutation("forget_grad_output", k)]
            found += [Mutation("scale", k, factor=c) for c in SCALE_FACTORS]
            found += [Mutation("drop_term", k, term=t) for t in op.terms]
            if is_square(op.in_shape):
                found.append(Mutation("transpose", k, term="h"))
            if op.uses_y and is_square(self.y_shape):
                found.append(Mutation("transpose", k, term="y"))
        if self.y_shape is not None:
            found.append(Mutation("drop_input_grad" if self.uses_y else "spurious_input_grad"))
        return found

    def describe(self, mutation: Mutation | None = None) -> str:
        """The Function as readable lines: shapes, ops with their output shapes, the mutation, inputs."""
        lines = [f"x: {self.x_shape}" + (f", y: {self.y_shape}" if self.y_shape is not None else "")]
        lines += ["h = x"]
        for k, op in enumerate(self.ops):
            mark = "   <-- mutated" if mutation and mutation.step == k else ""
            lines.append(f"{k}: {op.text():<36} # {op.out_shape}{mark}")
        lines.append(f"mutation: {mutation.text() if mutation else 'none (correct backward)'}")
        lines.append(f"seed: {self.seed}")
        with torch.no_grad():
            for name, value in zip(self.names(), self.inputs()):
                lines.append(f"{name} = {value.detach().tolist()}")
        return "\n".join(lines)


def run_forward(ops, h: torch.Tensor, y: torch.Tensor | None) -> tuple[torch.Tensor, list[tuple]]:
    saved = []
    for op in ops:
        h, keep = op.forward(h, y)
        saved.append(keep)
    return h, saved


def run_backward(ops, saved: list[tuple], g: torch.Tensor, mutation: Mutation | None) -> tuple:
    """The VJP chain in reverse, with ``mutation`` applied at its step; ``(grad_x, grad_y)``."""
    grad_y = None
    for k in reversed(range(len(ops))):
        op, here = ops[k], mutation if mutation and mutation.step == k else None
        kind = here.kind if here else None
        g_in = torch.ones_like(g) if kind == "forget_grad_output" else g
        grad_h, grad_y_here = op.vjp(g_in, saved[k], drop=here.term if kind == "drop_term" else None)
        if kind == "flip_sign":
            grad_h = -grad_h
        elif kind == "scale":
            grad_h = grad_h * here.factor
        elif kind == "transpose" and here.term == "h":
            grad_h = grad_h.t()
        elif kind == "transpose" and here.term == "y":
            grad_y_here = grad_y_here.t()
        if grad_y_here is not None:
            grad_y = grad_y_here if grad_y is None else grad_y + grad_y_here
        g = grad_h
    return g, grad_y


def make_function(program: Program, mutation: Mutation | None = None) -> type[torch.autograd.Function]:
    """An ordinary ``torch.autograd.Function`` subclass running ``program``."""
    ops = program.ops
    counts = [0] * len(ops)

    def save(ctx, saved: list[tuple]) -> None:
        for k, keep in enumerate(saved):
            counts[k] = len(keep)
        ctx.save_for_backward(*[t for keep in saved for t in keep])

    def unpack(ctx) -> list[tuple]:
        flat, saved, start = ctx.saved_tensors, [], 0
        for n in counts:
            saved.append(tuple(flat[start : start + n]))
            start += n
        return saved

    if program.y_shape is None:

        def forward(ctx, x):
            out, saved = run_forward(ops, x, None)
            save(ctx, saved)
            return out

        def backward(ctx, grad_output):
            grad_x, _ = run_backward(ops, unpack(ctx), grad_output, mutation)
            return grad_x

    else:
        uses_y = program.uses_y

        def forward(ctx, x, y):
            out, saved = run_forward(ops, x, y)
            save(ctx, saved)
            return out

        def backward(ctx, grad_output):
            grad_x, grad_y = run_backward(ops, unpack(ctx), grad_output, mutation)
            kind = mutation.kind if mutation else None
            if kind == "drop_input_grad" and uses_y:
                grad_y = None
            if kind == "spurious_input_grad" and not uses_y:
                grad_y = torch.ones(program.y_shape, dtype=grad_output.dtype)
            return grad_x, grad_y

    name = "Random" + ("Mutated" if mutation else "Correct")
    return type(
        name,
        (torch.autograd.Function,),
        {
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "__doc__": program.describe(mutation),
        },
    )


# ---------------------------------------------------------------------------------------------
# Hypothesis strategies
# ---------------------------------------------------------------------------------------------

input_shapes = st.one_of(
    st.tuples(st.integers(1, 6)),
    st.integers(2, 4).map(lambda n: (n, n)),
    st.tuples(st.integers(1, 4), st.integers(1, 5)),
    st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    st.just(()),
)


def factorizations(n: int, max_dims: int = 3) -> list[Shape]:
    """Every shape of 1 to ``max_dims`` dimensions with ``n`` elements."""
    shapes: list[Shape] = [(n,)]
    if max_dims > 1:
        for first in range(1, n + 1):
            if n % first == 0:
                shapes += [(first, *rest) for rest in factorizations(n // first, max_dims - 1)]
    return sorted(set(shapes), key=lambda s: (len(s), s))


def broadcast(a: Shape, b: Shape) -> Shape | None:
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


def first_y_shapes(h: Shape, how: str) -> list[Shape]:
    """Shapes for y when a binary op first uses it: same as h, broadcast either way, or matmul's."""
    if how == "matmul":
        if len(h) not in (1, 2):
            return []
        k = h[-1]
        return [(k,)] + [(k, m) for m in range(1, 5) if numel((k, m)) <= MAX_NUMEL]
    shapes = [h, ()]
    if len(h) >= 2:
        shapes += [h[-1:], (*h[:-1], 1)]
    if len(h) == 1:
        shapes += [(m, h[0]) for m in (2, 3) if m * h[0] <= MAX_NUMEL]
    return list(dict.fromkeys(shapes))


def matmul_shape(h: Shape, y: Shape) -> Shape | None:
    if len(h) not in (1, 2) or len(y) not in (1, 2) or h[-1] != y[0]:
        return None
    return (*h[:-1], *y[1:])


@dataclass
class Drawing:
    """What a program being drawn looks like so far."""

    shape: Shape
    bound: float
    y_shape: Shape | None = None
    binary_ops: bool = True  # False: y, if any, stays unused


def candidate_kinds(state: Drawing) -> list[str]:
    h, kinds = state.shape, ["elementwise", "times_sin"]
    if h:
        kinds += ["reduce", "flip"]
    if len(h) == 2:
        kinds.append("transpose")
    if numel(h) > 1:
        kinds.append("reshape")
    if h and h[0] >= 2:
        kinds.append("drop_first_row")
    if len(h) <= 2:
        kinds.append("unsqueeze")
    if state.binary_ops:
        kinds += [how for how in ("mul", "add", "matmul") if _binary_y_shapes(state, how)]
    return kinds


def _binary_y_shapes(state: Drawing, how: str) -> list[Shape]:
    """y shapes this binary op can use that keep the values bounded and small."""
    if state.y_shape is not None:
        options = [state.y_shape]
    else:
        options = first_y_shapes(state.shape, how)
    fits = []
    for y in options:
        out = matmul_shape(state.shape, y) if how == "matmul" else broadcast(state.shape, y)
        if out is None or numel(out) > MAX_NUMEL:
            continue
        if _binary_bound(state.bound, how, state.shape) > VALUE_BOUND:
            continue
        fits.append(y)
    return fits


def _binary_bound(b: float, how: str, h: Shape) -> float:
    if how == "mul":
        return b * INPUT_BOUND
    if how == "add":
        return b + INPUT_BOUND
    return h[-1] * b * INPUT_BOUND if h else b * INPUT_BOUND


@st.composite
def draw_op(draw, state: Drawing) -> tuple[Op, float]:
    """One op applicable to the current value, and the new bound on |h|."""
    h, b = state.shape, state.bound
    kind = draw(st.sampled_from(candidate_kinds(state)))
    if kind == "elementwise":
        names = [n for n, (_, _, bound) in ELEMENTWISE.items() if _safe(bound, b) <= VALUE_BOUND]
        name = draw(st.sampled_from(names))
        return elementwise(name, h), ELEMENTWISE[name][2](b)
    if kind == "times_sin":
        return TimesSin(h, h), b
    if kind == "reduce":
        how = draw(st.sampled_from(["sum", "mean"]))
        dim = draw(st.sampled_from([None, *range(len(h))]))
        keepdim = draw(st.booleans()) if dim is not None else False
        if dim is None:
            out, count = (), numel(h)
        else:
            out = tuple(1 if d == dim else n for d, n in enumerate(h)) if keepdim else h[:dim] + h[dim + 1 :]
            count = h[dim]
        bound = b * count if how == "sum" else b
        if bound > VALUE_BOUND:
            how, bound = "mean", b
        return Reduce(h, out, how=how, dim=dim, keepdim=keepdim), bound
    if kind == "flip":
        dims = draw(st.lists(st.sampled_from(range(len(h))), min_size=1, max_size=len(h), unique=True))
        return Flip(h, h, dims=tuple(dims)), b
    if kind == "transpose":
        return Transpose(h, (h[1], h[0])), b
    if kind == "reshape":
        out = draw(st.sampled_from([s for s in factorizations(numel(h)) if s != h]))
        return Reshape(h, out), b
    if kind == "drop_first_row":
        return DropFirstRow(h, (h[0] - 1, *h[1:])), b
    if kind == "unsqueeze":
        dim = draw(st.sampled_from(range(len(h) + 1)))
        return Unsqueeze(h, (*h[:dim], 1, *h[dim:]), dim=dim), b
    y = draw(st.sampled_from(_binary_y_shapes(state, kind)))
    state.y_shape = y
    bound = _binary_bound(b, kind, h)
    if kind == "matmul":
        return MatMul(h, matmul_shape(h, y), y_shape=y), bound
    return Binary(h, broadcast(h, y), how=kind, y_shape=y), bound


def _safe(bound: Callable[[float], float], b: float) -> float:
    try:
        return bound(b)
    except OverflowError:
        return math.inf


@st.composite
def programs(draw, max_ops: int = MAX_OPS) -> Program:
    """A random chain of ops on x (and maybe y), with values bounded by VALUE_BOUND."""
    x_shape = draw(input_shapes)
    unused_y = draw(st.sampled_from([False, False, False, True]))  # sometimes a second input, unused
    state = Drawing(x_shape, INPUT_BOUND, binary_ops=not unused_y)
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        op, state.bound = draw(draw_op(state))
        ops.append(op)
        state.shape = op.out_shape
    y_shape = draw(input_shapes) if unused_y else state.y_shape
    return Program(x_shape, y_shape, tuple(ops), seed=draw(st.integers(0, 2**16)))


@st.composite
def mutated_programs(draw, max_ops: int = MAX_OPS) -> tuple[Program, Mutation]:
    """A program and one mutation of its backward, the kind drawn first so each is as likely."""
    program = draw(programs(max_ops))
    candidates = program.mutations()
    kind = draw(st.sampled_from([k for k in MUTATION_KINDS if any(m.kind == k for m in candidates)]))
    mutation = draw(st.sampled_from([m for m in candidates if m.kind == kind]))
    return program, mutation
