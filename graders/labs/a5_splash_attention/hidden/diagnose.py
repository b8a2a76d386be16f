"""Known-mistake models of a5_splash_attention (lecture §6): what each plausible mistake
computes on a given input, and the diagnosis it earns.

A hidden check names a mistake only when the model reproduces the student's result on the
failing input (docs/style.md: a shown diagnosis is verified, not guessed): masks with an edge
or an id left out, MaskInfo tables built another way, kernels with one mistake.

The drawn cases (``MaskCase``, ``SplashCase``) are the records of ``checks.py``; they
are typed ``Any`` here so that this module does not import the checks that import it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import reference.a5_splash_attention as ref

#: Tolerances of the Splash output against float64 dense attention.
SPLASH_RTOL, SPLASH_ATOL = 2e-4, 2e-5
#: The fields of a MaskInfo, in order.
FIELDS = ref.MaskInfo._fields
#: The finite stand-in for -inf the kernels' models mask with.
FINITE_MASK = -0.7 * float(np.finfo(np.float32).max)

def partial_tiles(case: Any) -> list[tuple[int, int, np.ndarray]]:
    """(q block, kv block, contents) of every partial tile, in row-major order."""
    bq, bkv = case.block_q, case.block_kv
    nq, nkv = case.mask.shape[0] // bq, case.mask.shape[1] // bkv
    tiles = []
    for r in range(nq):
        for c in range(nkv):
            tile = case.mask[r * bq:(r + 1) * bq, c * bkv:(c + 1) * bkv]
            if tile.any() and not tile.all():
                tiles.append((r, c, tile))
    return tiles


def pattern_models(case: Any) -> list[tuple[np.ndarray, str]]:
    """``partial_mask_blocks`` as two known mistakes store them, with their diagnoses:
    one pattern per partial tile (no de-duplication), and patterns shared by the tiles'
    diagonal offset (query start minus key start) instead of their contents."""
    bq, bkv = case.block_q, case.block_kv
    tiles = partial_tiles(case)
    by_offset: dict[int, np.ndarray] = {}
    for r, c, tile in tiles:
        by_offset.setdefault(r * bq - c * bkv, tile)

    def stack(patterns: list[np.ndarray]) -> np.ndarray:
        return np.stack(patterns) if patterns else np.zeros((0, bq, bkv), bool)

    return [
        (stack([tile for _, _, tile in tiles]),
         "every partial tile stores its own pattern: store each distinct pattern once, and "
         "let partial tiles with equal contents share its id (lecture §6.2)"),
        (stack(list(by_offset.values())),
         "patterns are shared by the tiles' position (query start minus key start), which "
         "holds for causal masks but not for this one: partial tiles share a pattern exactly "
         "when their contents are equal, so compare the tiles' contents, not their positions "
         "or offsets (lecture §6.2)"),
    ]


def pattern_diagnosis(got: np.ndarray, case: Any) -> str | None:
    """The diagnosis of the modelled mistakes whose ``partial_mask_blocks`` equal ``got``
    (both, in one sentence, when on this mask they store the same patterns), else None."""
    matching = [text for patterns, text in pattern_models(case)
                if patterns.shape == got.shape and np.array_equal(patterns, got)]
    if len(matching) > 1:
        return ("every partial tile stores its own pattern here, as it does when patterns "
                "are not de-duplicated or are keyed by the tiles' position (query start "
                "minus key start): partial tiles share a pattern exactly when their contents "
                "are equal, so compare the tiles' contents, not their positions or offsets "
                "(lecture §6.2)")
    return matching[0] if matching else None


@dataclasses.dataclass(frozen=True)
class KernelMistake:
    """One modelled mistake of the Splash kernel (a diagnosis is shown only when
    the student's output is what this mistake computes on the failing input).

    ``mask_full_tiles``: mask_ref is applied where block_mask == 2 too;
    ``unmasked_partials``: partial tiles are computed without mask_ref;
    ``neg_inf``: masked scores are -inf and nothing keeps exp's arguments finite;
    ``init_at_g0``: m, l and acc are initialised at g == 0 only, not at bounds_start;
    ``init_every_tile``: they are initialised at every grid step (each row's output is the
    attention over its last active tile).
    ``strict_nan``: the model's NaN are part of the mistake (the student's output must be
    NaN exactly there); otherwise a NaN of the model (a row with no visible key) leaves
    that element unconstrained. ``text``: the diagnosis.
    """

    text: str
    mask_full_tiles: bool = False
    unmasked_partials: bool = False
    neg_inf: bool = False
    init_at_g0: bool = False
    init_every_tile: bool = False
    strict_nan: bool = True


def splash_model(c: Any, fields: tuple, mistake: KernelMistake) -> np.ndarray:
    """float64 [H, L, dv]: what a Splash kernel with ``mistake`` computes in the grader's
    standard pallas_call over ``fields`` (the seven MaskInfo arrays it was handed, handout
    order, at least one pattern): per head the active tiles in order, the online-softmax
    update of lecture §5.2 at each, the output row written at bounds_end. Rows never
    written stay NaN (poisoned memory); NaN and inf propagate as they would in the kernel.
    """
    info = dict(zip(FIELDS, fields, strict=True))
    patterns = np.asarray(info["partial_mask_blocks"], bool)
    bq, bkv = patterns.shape[1:]
    q, k, v = (np.asarray(a, np.float64) for a in (c.q, c.k, c.v))
    heads, length, dv = v.shape[0], q.shape[1], v.shape[2]
    out = np.full((heads, length, dv), np.nan)
    fill = -np.inf if mistake.neg_inf else FINITE_MASK
    table = zip(*(np.asarray(info[name]).tolist() for name in (
        "active_rows", "active_cols", "block_mask", "mask_next", "bounds_start",
        "bounds_end")), strict=True)
    steps = list(table)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for h in range(heads):
            m = l_sum = acc = None
            for g, (r, col, kind, nxt, start, end) in enumerate(steps):
                if mistake.init_every_tile or ((g == 0) if mistake.init_at_g0 else bool(start)):
                    m, l_sum, acc = np.full((bq, 1), -np.inf), np.zeros((bq, 1)), np.zeros(
                        (bq, dv))
                if m is None:  # never initialised: the poisoned scratch
                    m, l_sum, acc = (np.full((bq, 1), np.nan), np.full((bq, 1), np.nan),
                                     np.full((bq, dv), np.nan))
                qs = slice(r * bq, (r + 1) * bq)
                ks = slice(col * bkv, (col + 1) * bkv)
                scores = q[h, qs] @ k[h, ks].T * c.scale
                masked = (kind == 1 and not mistake.unmasked_partials) or (
                    kind == 2 and mistake.mask_full_tiles)
                visible = patterns[nxt] if masked else np.ones((bq, bkv), bool)
                scores = np.where(visible, scores, fill)
                m_next = np.maximum(m, scores.max(axis=1, keepdims=True))
                probs = np.exp(scores - m_next)
                if not mistake.neg_inf:
                    probs = np.where(visible, probs, 0.0)
                alpha = np.exp(m - m_next)
                l_sum = alpha * l_sum + probs.sum(axis=1, keepdims=True)
                acc = alpha * acc + probs @ v[h, ks]
                m = m_next
                if end:
                    out[h, qs] = acc / l_sum
    return out


#: The Splash kernel's modelled mistakes, in the order they are tried.
KERNEL_MISTAKES = (
    KernelMistake("the mask is applied on full tiles too: apply mask_ref only where "
                  "block_mask == 1 (a full tile's mask_ref holds whatever pattern mask_next "
                  "names, not the tile's own) (lecture §6.3)", mask_full_tiles=True,
                  strict_nan=False),
    KernelMistake("partial tiles are computed without their mask: where block_mask == 1 the "
                  "scores of masked pairs must not count (lecture §6.3)",
                  unmasked_partials=True),
    KernelMistake("NaN in the rows whose keys are all masked in their first active tile: "
                  "with masked scores at -inf and the running maximum still -inf, "
                  "exp(s - m_next) and exp(m_prev - m_next) are exp(-inf - (-inf)) = NaN, "
                  "which then spreads through l and acc. Zero p where the mask hides a key "
                  "and keep exp's arguments finite: a large finite negative mask value, or "
                  "a maximum of 0 while it is still -inf (lecture §5.2, §6.3)", neg_inf=True),
    KernelMistake("m, l and acc are initialised only at the first grid step of a head "
                  "(g == 0), so every later q row of tiles starts from the previous row's "
                  "running max, sum and output; initialise them where bounds_start is set "
                  "(lecture §6.2, §6.3)", init_at_g0=True),
    KernelMistake("m, l and acc are initialised at every grid step (the pl.when around the "
                  "initialisation is always true), so each row of the output is the attention "
                  "over the last active tile of its q row only; initialise them only where "
                  "bounds_start is set (lecture §6.2, §6.3)", init_every_tile=True),
)


def explains(got: object, expected: np.ndarray, model: np.ndarray, strict_nan: bool) -> bool:
    """Whether ``model`` (a mistake's output) accounts for ``got``, which differs from
    ``expected``: equal within the Splash tolerance wherever the model is a number; where
    the model is NaN, ``got`` is NaN too when the NaN are the mistake's (``strict_nan``),
    else unconstrained (a row the mistake leaves with no visible key, where a kernel gives
    0/0 = NaN or whatever its arithmetic makes of it); and at least one element where
    ``got`` is wrong is one the mistake accounts for: a number the model computes, or NaN
    in a row the mistake leaves with no visible key."""
    try:
        g = np.asarray(got, np.float64)
    except (TypeError, ValueError):
        return False
    if g.shape != model.shape or g.shape != expected.shape:
        return False
    with np.errstate(invalid="ignore"):
        close = np.abs(g - model) <= SPLASH_ATOL + SPLASH_RTOL * np.abs(model)
        wrong = ~(np.abs(g - expected) <= SPLASH_ATOL + SPLASH_RTOL * np.abs(expected))
    undefined = np.isnan(model)
    if strict_nan:
        return bool(np.where(undefined, np.isnan(g), close).all())
    explained = wrong & np.where(undefined, np.isnan(g), close)
    return bool((close | undefined).all() and explained.any())


def accounts_for(got: object, model: np.ndarray, strict_nan: bool) -> bool:
    """Whether ``got`` is what ``model`` (a mistake's output) computes: within the Splash
    tolerance wherever the model is a number, and where it is NaN, NaN too (``strict_nan``)
    or anything (a row the mistake leaves with no visible key). Unlike ``explains`` it does
    not ask that ``got`` be wrong: it checks a second run of the same kernel."""
    try:
        g = np.asarray(got, np.float64)
    except (TypeError, ValueError):
        return False
    if g.shape != model.shape:
        return False
    with np.errstate(invalid="ignore"):
        close = np.abs(g - model) <= SPLASH_ATOL + SPLASH_RTOL * np.abs(model)
    undefined = np.isnan(model)
    return bool(np.where(undefined, np.isnan(g) if strict_nan else True, close).all())


def diagnose_kernel(got: object, c: Any, fields: tuple, expected: np.ndarray,
                    also: tuple[tuple[object, tuple], ...] = ()) -> str | None:
    """The text of the modelled kernel mistakes that compute ``got`` on this input (all of
    them when the input cannot tell them apart), else None: never a guess. ``also``: other
    runs of the same kernel on the same q, k, v, as (output, the MaskInfo arrays it was
    handed); a mistake is named only when its model computes each of them too (two
    mistakes that agree on one set of arrays can differ on another)."""
    texts = [mistake.text for mistake in KERNEL_MISTAKES
             if explains(got, expected, splash_model(c, fields, mistake), mistake.strict_nan)
             and all(accounts_for(other, splash_model(c, other_fields, mistake),
                                  mistake.strict_nan) for other, other_fields in also)]
    if len(texts) <= 1:
        return texts[0] if texts else None
    return f"{len(texts)} known mistakes give exactly this output here: " + "; or ".join(texts)
