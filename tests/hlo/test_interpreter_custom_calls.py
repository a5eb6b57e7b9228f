"""Every custom-call jaxlib's CPU backend emits, run by the interpreter and by XLA:CPU alike.

JAX lowers ``jnp.linalg`` / ``jax.lax.linalg`` / ``jax.scipy.linalg`` functions for
f32, f64, c64 and c128 (square, tall, wide and batched operands where the routine
allows them); every LAPACK custom-call in the lowered HLO becomes its own module
(parameters -> custom-call -> root), so each of its results is compared, not only
what JAX keeps of them. The interpreter runs each module; XLA:CPU runs them in
one subprocess, several calls side by side per compiled module (compiling is
what takes XLA's time), on the same inputs.

Both sides call the same LAPACK routines (jaxlib calls SciPy's), so results are
compared tightly: integers (``info``, pivots, ``sdim``) exactly; floats normwise,
``max|xla - ours| <= tol * max(1, max|xla|)`` per result, with tol ``1e-4`` for
32-bit and ``1e-9`` for 64-bit element types. Results LAPACK leaves undefined (U and
Vt when the SVD computes none, Schur vectors with mode 'N', eigenvectors not asked
for) are skipped. ``TopK`` (XLA:CPU's own target, made by XLA from a sort) is
checked on rows with ties, through modules XLA compiles from JAX's ``top_k``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from xla_cpu import execute_in_xla, leaves

from hlo.interpreter import InterpretError, evaluate
from hlo.interpreter.custom_calls import JAXLIB_CPU_TARGETS, REFUSED
from hlo.parser import parse_module

DTYPES = ("float32", "float64", "complex64", "complex128")


def _functions():
    """name -> (function of one matrix, shapes to try)."""
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    from jax import lax
    from jax.experimental import sparse

    lin = lax.linalg
    square, rect = [(4, 4), (2, 3, 3)], [(4, 4), (5, 3), (3, 5), (2, 3, 3)]
    return {
        "lu": (lambda a: lin.lu(a), rect),
        "qr": (lambda a: jnp.linalg.qr(a), rect),
        "qr_pivoting": (lambda a: jsl.qr(a, pivoting=True), [(4, 4), (5, 3)]),
        "qr_multiply": (lambda a: jsl.qr_multiply(a, a), [(4, 4)]),
        "cholesky": (lambda a: lin.cholesky(a), square),
        "svd_full": (lambda a: jnp.linalg.svd(a), rect),
        "svd_thin": (lambda a: jnp.linalg.svd(a, full_matrices=False), [(5, 3), (3, 5)]),
        "svd_values": (lambda a: jnp.linalg.svd(a, compute_uv=False), [(4, 4)]),
        "gesvd": (lambda a: lin.svd(a, algorithm=lin.SvdAlgorithm.QR), rect),
        "gesvd_thin": (lambda a: lin.svd(a, full_matrices=False, algorithm=lin.SvdAlgorithm.QR),
                       [(5, 3)]),
        "eigh": (lambda a: lin.eigh(a), square),
        "eigh_upper": (lambda a: lin.eigh(a, lower=False), [(4, 4)]),
        "eig": (lambda a: lin.eig(a, compute_left_eigenvectors=True), [(5, 5), (2, 3, 3)]),
        "eigvals": (lambda a: jnp.linalg.eigvals(a), [(4, 4)]),
        "schur": (lambda a: lin.schur(a), [(5, 5), (2, 3, 3)]),
        "schur_values": (lambda a: lin.schur(a, compute_schur_vectors=False), [(4, 4)]),
        "hessenberg": (lambda a: lin.hessenberg(a), [(5, 5), (2, 3, 3)]),
        "tridiagonal": (lambda a: lin.tridiagonal(a), [(5, 5), (2, 3, 3)]),
        "tridiagonal_upper": (lambda a: lin.tridiagonal(a, lower=False), [(4, 4)]),
        "trsm_left_lower": (
            lambda a: lin.triangular_solve(a, a[..., :2], left_side=True, lower=True),
            [(4, 4), (2, 3, 3)]),
        "trsm_right_upper_adjoint_unit": (
            lambda a: lin.triangular_solve(a, a[..., :2, :], left_side=False, lower=False,
                                           transpose_a=True, conjugate_a=True, unit_diagonal=True),
            [(4, 4)]),
        "tridiagonal_solve": (lambda a: lin.tridiagonal_solve(a[..., 0], a[..., 1], a[..., 2], a),
                              [(5, 5), (2, 4, 4)]),
        "tridiagonal_solve_perturbed": (
            lambda a: lin.tridiagonal_solve(a[..., 0], a[..., 1], a[..., 2], a, perturb_singular=True),
            [(5, 5), (1, 3), (2, 4, 4)]),
        "csr_matmat": (lambda a: sparse.BCSR.fromdense(a, nse=7) @ a.T, [(4, 4), (5, 3)]),
        "csr_matvec": (lambda a: sparse.BCSR.fromdense(a, nse=6) @ a[:, 0], [(5, 5)]),
        "dce_sink": (lambda a: (lax.dce_sink(a, prevent_mlir_dce=True), a + 1)[1], [(3, 3)]),
    }


_CALL = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=\s*(.*?)\s+custom-call\((.*?)\),\s*(.*)$")


def _custom_calls(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if re.search(r'custom_call_target="(lapack_|cpu_csr|dce_sink|tridiagonal)', line)]


def _operand_shapes(attrs: str) -> list[str]:
    one = r"\w+\[[\d,]*\]\{[\d,]*\}"
    found = re.search(rf"operand_layout_constraints=\{{((?:{one}(?:, )?)+)\}}", attrs)
    return re.findall(one, found.group(1))


def _module(line: str) -> tuple[str, str, list[str]]:
    """A module running one custom-call line on parameters: (text, target, operand shapes)."""
    _name, shape, _operands, attrs = _CALL.match(line).groups()
    attrs = re.sub(r",\s*metadata=\{[^}]*\}", "", attrs)
    target = re.search(r'custom_call_target="(\w+)"', attrs).group(1)
    shapes = _operand_shapes(attrs)
    params = "".join(f"  p{i} = {s} parameter({i})\n" for i, s in enumerate(shapes))
    call = ", ".join(f"p{i}" for i in range(len(shapes)))
    text = (f"HloModule {target}\n\nENTRY main {{\n{params}"
            f"  ROOT call = {shape} custom-call({call}), {attrs}\n}}\n")
    return text, target, shapes


#: Calls compiled together in one XLA module.
GROUP = 40

_NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128,
       "s32": np.int32}


def _random(shape: str, gen: np.random.Generator, *, spd: bool = False, diag: float = 0.0):
    etype, dims = re.match(r"(\w+)\[([\d,]*)\]", shape).groups()
    dims = tuple(int(d) for d in dims.split(",") if d)
    dtype = np.dtype(_NP[etype])
    if dtype.kind == "i":
        return np.zeros(dims, dtype)
    x = gen.standard_normal(dims)
    if dtype.kind == "c":
        x = x + 1j * gen.standard_normal(dims)
    if spd:
        x = x @ np.conj(np.swapaxes(x, -1, -2)) + dims[-1] * np.eye(dims[-1])
    elif diag and len(dims) >= 2:
        x = x + diag * np.eye(dims[-2], dims[-1])
    return x.astype(dtype)


def _csr(shapes: list[str], gen: np.random.Generator) -> list[np.ndarray]:
    """A random CSR matrix (rows from indptr's size, columns from the dense operand's rows)."""
    data, rhs = _random(shapes[0], gen), _random(shapes[3], gen)
    rows = int(re.search(r"\[(\d+)\]", shapes[1]).group(1)) - 1
    row_of = np.sort(gen.integers(0, rows, size=len(data)))
    indptr = np.searchsorted(row_of, np.arange(rows + 1)).astype(np.int32)
    indices = gen.integers(0, len(rhs), size=len(data)).astype(np.int32)
    return [data, indptr, indices, rhs]


def _inputs(target: str, shapes: list[str], gen: np.random.Generator) -> list[np.ndarray]:
    if target == "cpu_csr_sparse_dense_ffi":
        return _csr(shapes, gen)
    if target == "tridiagonal_solve_perturbed_ffi":  # singular: every other diagonal entry is 0
        dl, d, du, b = (_random(s, gen) for s in shapes)
        d[..., ::2] = 0
        return [dl, d, du, b]
    routine = target[len("lapack_") + 1:-len("_ffi")]
    if routine == "potrf":
        return [_random(shapes[0], gen, spd=True)]
    if routine == "trsm":
        return [_random(shapes[0], gen, diag=4.0), _random(shapes[1], gen)]
    if routine == "gtsv":
        return [_random(s, gen) + (4.0 if i == 1 else 0.0) for i, s in enumerate(shapes)]
    return [_random(s, gen) for s in shapes]


def _undefined(target: str, attrs: str) -> set[int]:
    """Result indices LAPACK leaves undefined for this call (uninitialized in XLA)."""
    if not target.startswith("lapack_"):
        return set()
    config = dict(re.findall(r"(\w+) = (\d+)", attrs))
    routine = target[len("lapack_") + 1:-len("_ffi")]
    if routine in ("gesdd", "gesvd") and config.get("mode") == "78":
        return {2, 3}
    if routine == "gees" and config.get("mode") == "78":
        return {1}
    if routine == "geev":
        last = 3 if target[7] in "sd" else 2
        return ({last - 1} if config.get("compute_left") == "78" else set()) | (
            {last} if config.get("compute_right") == "78" else set())
    return set()


def _cases():
    import jax

    # 64-bit types only while these modules are lowered: the flag is process-wide and other
    # tests of the same process compare against jax's 32-bit defaults.
    with jax.enable_x64(True):
        return _cases_x64()


def _cases_x64():
    import jax

    gen = np.random.default_rng(13)
    cases, seen = [], set()
    for name, (fn, shapes) in _functions().items():
        for dtype in DTYPES:
            for shape in shapes:
                text = jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, dtype)).as_text(dialect="hlo")
                for line in _custom_calls(text):
                    module, target, operand_shapes = _module(line)
                    if module in seen:
                        continue
                    seen.add(module)
                    attrs = _CALL.match(line).group(4)
                    cases.append((f"{name}:{target}:{shape}", module, target,
                                  _inputs(target, operand_shapes, gen), _undefined(target, attrs)))
    return cases


#: XLA's comparators for TopK: of values, and of (value, index) pairs as it leaves a
#: sort's comparator (total order on the bits, greater first), as in after_layout modules.
_GREATER = {
    2: "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
       "  ROOT gt = pred[] compare(a, b), direction=GT\n",
    4: "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  i = s32[] parameter(2)\n"
       "  j = s32[] parameter(3)\n  ai = s32[] bitcast-convert(a)\n  bi = s32[] bitcast-convert(b)\n"
       "  zero = s32[] constant(0)\n  big = s32[] constant(2147483647)\n"
       "  an = pred[] compare(ai, zero), direction=LT\n  bn = pred[] compare(bi, zero), direction=LT\n"
       "  ax = s32[] xor(big, ai)\n  bx = s32[] xor(big, bi)\n"
       "  ak = s32[] select(an, ax, ai)\n  bk = s32[] select(bn, bx, bi)\n"
       "  ROOT gt = pred[] compare(ak, bk), direction=GT\n",
}


def _topk_module(shape: tuple[int, ...], k: int, arity: int) -> str:
    """XLA:CPU's form of a top-k (what its TopkRewriter emits for ``jax.lax.top_k``)."""
    dims = ",".join(map(str, shape))
    out = ",".join(map(str, shape[:-1] + (k,)))
    return (f"HloModule topk\n\ngreater {{\n{_GREATER[arity]}}}\n\n"
            f"ENTRY main {{\n  x = f32[{dims}] parameter(0)\n"
            f"  ROOT t = (f32[{out}], s32[{out}]) custom-call(x), custom_call_target=\"TopK\", "
            "called_computations={greater}\n}\n")


def _topk_cases():
    import jax
    import jax.numpy as jnp

    out = []
    gen = np.random.default_rng(5)
    for (shape, k), arity in zip((((3, 10), 4), ((17,), 5), ((2, 64), 7), ((4, 9), 2)), (2, 4, 2, 4)):
        # jax.lax.top_k compiles to this very custom-call on CPU:
        compiled = jax.jit(lambda a, k=k: jax.lax.top_k(a, k)).lower(
            jnp.zeros(shape, jnp.float32)).compile().as_text()
        assert 'custom_call_target="TopK"' in compiled
        x = gen.integers(-4, 5, size=shape).astype(np.float32)  # many ties
        x.reshape(-1)[::7] += gen.standard_normal(x.size)[::7].astype(np.float32)
        out.append((f"TopK:{shape}:{k}:{arity}", _topk_module(shape, k, arity), "TopK", [x], set()))
    return out


def _combined(cases) -> tuple[str, list[np.ndarray]]:
    """One module running the entry computations of single-call ``cases`` side by side."""
    params, roots, comps, args = [], [], [], []
    for k, (_, text, _, case_args, _) in enumerate(cases):
        head, entry = text.split("ENTRY main {\n")
        comps.append(head.split("\n", 1)[1].replace("greater", f"greater{k}"))
        for line in entry[:entry.rindex("}")].splitlines():
            line = re.sub(r"\b(p\d+|x|call|t)\b(?=[ ,)])", rf"c{k}_\1", line)
            line = line.replace("{greater}", f"{{greater{k}}}")
            if " parameter(" in line:
                line = re.sub(r"parameter\(\d+\)", f"parameter({len(args)})", line)
                args.append(case_args[int(re.search(r"c\d+_p(\d+)", line).group(1))]
                            if "_p" in line.split("=")[0] else case_args[0])
                params.append(line)
            else:
                name = re.match(r"\s*ROOT (\S+)", line).group(1)
                roots.append(name)
                params.append(line.replace("ROOT ", ""))
    body = "\n".join(params + [f"  ROOT all = tuple({', '.join(roots)})"])
    return "HloModule combined\n\n" + "".join(comps) + f"ENTRY main {{\n{body}\n}}\n", args


def _error(x: np.ndarray, y: np.ndarray) -> float:
    scale = max(1.0, float(np.abs(x).max(initial=0.0)))
    return float(np.abs(x.astype(np.complex128) - y.astype(np.complex128)).max(initial=0.0)) / scale


@pytest.mark.xla
def test_custom_calls_match_xla_cpu(tmp_path):
    cases = _cases() + _topk_cases()
    targets = {target for _, _, target, _, _ in cases}
    assert JAXLIB_CPU_TARGETS - set(REFUSED) <= targets, "a target that runs has no case"
    ours, failures = [], []
    for name, text, _, args, _ in cases:
        try:
            ours.append(leaves(evaluate(parse_module(text), args)))
        except InterpretError as exc:
            ours.append(None)
            failures.append(f"{name}: {exc}")
    groups = [cases[i:i + GROUP] for i in range(0, len(cases), GROUP)]
    theirs = [leaf for found in execute_in_xla([_combined(g) for g in groups], tmp_path)
              for leaf in found]
    assert len(theirs) == sum(len(leaves_) for leaves_ in ours if leaves_ is not None)
    for (name, _text, _target, _args, undefined), mine in zip(cases, ours):
        if mine is None:
            continue
        expected, theirs = theirs[:len(mine)], theirs[len(mine):]
        for i, (x, y) in enumerate(zip(expected, mine)):
            if i in undefined:
                continue
            if x.shape != y.shape or x.dtype != y.dtype:
                failures.append(f"{name} result {i}: {y.dtype}{y.shape}, XLA {x.dtype}{x.shape}")
            elif x.dtype.kind in "iub":
                if not np.array_equal(x, y):
                    failures.append(f"{name} result {i}: {y.ravel()[:6]} != XLA {x.ravel()[:6]}")
            else:
                tol = 1e-4 if x.dtype in (np.float32, np.complex64) else 1e-9
                if _error(x, y) > tol:
                    failures.append(f"{name} result {i}: error {_error(x, y):.2e} > {tol}")
    assert not failures, f"{len(failures)} of {len(cases)} cases differ:\n" + "\n".join(failures)


def test_every_jaxlib_cpu_target_is_listed():
    import jax  # noqa: F401  (registers jaxlib's CPU targets)
    import jaxlib.cpu_sparse
    import jaxlib.lapack
    from jax._src.lib import _jax

    registered = {name for name, _, _ in jaxlib.lapack.registrations()["cpu"]}
    registered |= {name for name, _, _ in jaxlib.cpu_sparse.registrations()["cpu"]}
    registered |= set(_jax.custom_call_targets("Host"))
    assert registered == set(JAXLIB_CPU_TARGETS)


@pytest.mark.parametrize("target", sorted(REFUSED) + ["lapack_sgetrf", "my_kernel"])
def test_other_targets_are_refused_by_name(target):
    text = (f'HloModule m\n\nENTRY main {{\n  x = f32[4] parameter(0)\n'
            f'  ROOT y = f32[4] custom-call(x), custom_call_target="{target}"\n}}\n')
    with pytest.raises(InterpretError, match=re.escape(f"'{target}'")):
        evaluate(parse_module(text), [np.zeros(4, np.float32)])


def test_lapack_diagnostics_stay_off_standard_output(capfd):
    # LAPACK's XERBLA prints "** On entry to ..." on descriptor 1 for illegal input (SciPy's
    # sgeev on a NaN matrix is one that does); inside the kernels' guard it reaches stderr, so
    # a command's JSON on stdout stays intact.
    from scipy.linalg import lapack

    from hlo.interpreter.lapack import _lapack_messages_to_stderr

    nan = np.full((4, 4), np.nan, np.float32)
    lapack.sgeev(nan)
    unguarded = capfd.readouterr()
    assert "On entry to" in unguarded.out  # the routine really prints there
    with _lapack_messages_to_stderr():
        lapack.sgeev(nan)
    guarded = capfd.readouterr()
    assert guarded.out == "" and "On entry to" in guarded.err
