#!/usr/bin/env python3
"""signal_ref.py -- scipy / numpy reference values for a port's signal and
statistics helpers (no torch needed):

  resample_poly_4_25/  scipy.signal.resample_poly(x, 4, 25), 20 kHz -> 3.2 kHz,
                       with the FIR taps scipy uses (checked bit for bit)
  resample_poly_8_25/  scipy.signal.resample_poly(x, 8, 25), 10 kHz -> 3.2 kHz
  wasserstein.csv      scipy.stats.wasserstein_distance of 50 sample pairs
  pearson.csv          scipy.stats.pearsonr r of 50 pairs of 640-vectors
  quantiles.csv        numpy.quantile(method="linear") and the order statistic
                       r_(ceil(alpha S)) of 30 samples of size 20
  README.md, manifest.json

    /usr/bin/python3 signal_ref.py --seed 11 --out ../golden/signal
    /usr/bin/python3 signal_ref.py --seed 23 --out ../hidden/golden/signal
"""

import argparse
import json
import math
import os
import platform
import sys
from fractions import Fraction

import numpy as np
import scipy
import scipy.signal
import scipy.stats

ALPHAS = ["0.05", "0.25", "0.5", "0.75", "0.95"]   # exact decimal strings
Q_SIZE = 20
F0 = 50.0
DURATION = 0.5
SAG = (0.2, 0.3, 0.5)        # start s, end s, remaining amplitude (p.u.)
H5 = 0.05                    # 5th harmonic amplitude
NOISE = 0.005                # std of the additive noise


def r17(v):
    """float64 -> shortest string that round-trips (Python repr)."""
    return repr(float(v))


def write_column(path, values):
    with open(path, "w") as f:
        f.writelines(r17(v) + "\n" for v in values)


def test_signal(fs, seed):
    """0.5 s at fs: a(t) [sin(w t + phi) + 0.05 sin(5 (w t + phi) + th5)] + noise,
    w = 2 pi 50, a = 0.5 for 0.2 <= t < 0.3 s (sag), else 1; phi, th5 ~ U[-pi, pi)
    and noise N(0, 0.005^2) from numpy default_rng(seed)."""
    rng = np.random.default_rng(seed)
    n = int(round(DURATION * fs))
    t = np.arange(n) / fs
    phi = rng.uniform(-np.pi, np.pi)
    th5 = rng.uniform(-np.pi, np.pi)
    a = np.where((t >= SAG[0]) & (t < SAG[1]), SAG[2], 1.0)
    wt = 2 * np.pi * F0 * t
    x = a * (np.sin(wt + phi) + H5 * np.sin(5 * (wt + phi) + th5)) + rng.normal(0.0, NOISE, n)
    return x, {"fs": fs, "n": n, "phi": phi, "th5": th5, "seed": seed}


def resample_case(out, name, fs, up, down, seed):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    x, params = test_signal(fs, seed)
    y = scipy.signal.resample_poly(x, up, down)            # default window ('kaiser', 5.0)
    max_rate = max(up, down)
    half_len = 10 * max_rate
    h = scipy.signal.firwin(2 * half_len + 1, 1.0 / max_rate, window=("kaiser", 5.0)) * up
    # (1) bit for bit: these taps, handed to resample_poly as its window
    #     (which multiplies them by `up` again; dividing by a power of 2 is exact)
    y_taps = scipy.signal.resample_poly(x, up, down, window=h / up)
    bit_exact = bool(np.array_equal(y, y_taps))
    # (2) the explicit formula y[n] = sum_m x[m] h[n*down - m*up + half_len]
    n_out = -(-len(x) * up // down)
    y_formula = np.empty(n_out)
    for n in range(n_out):
        lo = max(0, -(-(n * down - half_len) // up))
        hi = min(len(x) - 1, (n * down + half_len) // up)
        m = np.arange(lo, hi + 1)
        y_formula[n] = np.dot(x[m], h[n * down - m * up + half_len])
    assert len(y) == n_out
    write_column(os.path.join(d, "input.csv"), x)
    write_column(os.path.join(d, "output.csv"), y)
    write_column(os.path.join(d, "taps.csv"), h)
    return {"folder": name, "up": up, "down": down, "fs_in": fs, "fs_out": fs * up / down,
            "n_in": len(x), "n_out": n_out, "half_len": half_len, "n_taps": len(h),
            "taps": f"scipy.signal.firwin({2 * half_len + 1}, 1/{max_rate}, window=('kaiser', 5.0)) * {up}",
            "taps_sum": float(h.sum()),
            "taps_reproduce_resample_poly_bit_for_bit": bit_exact,
            "explicit_formula_max_abs_diff": float(np.abs(y - y_formula).max()),
            "signal": params}


def wasserstein_rows(rng):
    """40 pairs of size 5 and 10 of size 20, with some ties, zeros, equal and
    shifted samples."""
    rows, kinds = [], []
    for i in range(50):
        n = 5 if i < 40 else 20
        if i < 24 or 40 <= i < 46:
            u, v = rng.normal(0, 1, n), rng.normal(0.3, 1.5, n)
            kind = "normal"
        elif i < 28:
            u, v = np.maximum(rng.normal(0, 1, n), 0), np.maximum(rng.normal(0.2, 1, n), 0)
            kind = "relu (zeros, ties)"
        elif i < 32 or 46 <= i < 48:
            u, v = np.round(rng.normal(0, 1, n), 1), np.round(rng.normal(0, 1, n), 1)
            kind = "rounded to 0.1 (ties within and across)"
        elif i < 34:
            u = rng.normal(0, 1, n)
            v = u.copy()
            rng.shuffle(v)
            kind = "same values, permuted (distance 0)"
        elif i < 37 or i == 48:
            u = rng.normal(0, 1, n)
            v = u + 0.25
            kind = "shifted by 0.25"
        else:
            u, v = rng.exponential(1.0, n) * 1e-3, rng.exponential(2.0, n) * 1e-3
            kind = "small scale (1e-3)"
        w = scipy.stats.wasserstein_distance(u, v)
        rows.append((n, u, v, w))
        kinds.append(kind)
    return rows, kinds


def pearson_rows(rng):
    """50 pairs of 640-vectors, values written with 4 decimals; r is computed
    from the values as written."""
    rows, kinds = [], []
    for i in range(50):
        x = rng.normal(0, 1, 640)
        e = rng.normal(0, 1, 640)
        if i < 20:
            rho = -0.95 + 1.9 * i / 19
            y = rho * x + math.sqrt(1 - rho * rho) * e
            kind = f"correlated, rho {rho:.3f}"
        elif i < 30:
            y = e
            kind = "independent"
        elif i < 40:
            x = np.maximum(x, 0)                   # relevance-map like: many zeros
            y = np.maximum(0.7 * x + 0.5 * e, 0)
            kind = "nonnegative with zeros (ReLU)"
        elif i < 45:
            y = 3.0 + 0.01 * (0.6 * x + 0.8 * e)
            kind = "offset 3, scale 0.01"
        else:
            x = 100.0 + x
            y = -(100.0 + 0.5 * x + e)
            kind = "offset 100, negative correlation"
        xs = ["%.4f" % v for v in x]
        ys = ["%.4f" % v for v in y]
        xv = np.array([float(s) for s in xs])
        yv = np.array([float(s) for s in ys])
        r = scipy.stats.pearsonr(xv, yv)[0]
        rows.append((xs, ys, r))
        kinds.append(kind)
    return rows, kinds


def quantile_rows(rng):
    rows, kinds = [], []
    alphas = np.array([float(a) for a in ALPHAS])
    ks = [math.ceil(Fraction(a) * Q_SIZE) for a in ALPHAS]    # exact: 1, 5, 10, 15, 19
    ks_float = [math.ceil(float(a) * Q_SIZE) for a in ALPHAS]
    assert ks == ks_float, (ks, ks_float)
    for i in range(30):
        if i < 20:
            x = rng.normal(0, 1, Q_SIZE)
            kind = "normal"
        elif i < 25:
            x = np.round(rng.normal(0, 1, Q_SIZE), 1)
            kind = "rounded to 0.1 (ties)"
        else:
            x = np.maximum(rng.normal(0, 1, Q_SIZE), 0)
            kind = "ReLU (zeros)"
        lin = np.quantile(x, alphas, method="linear")
        srt = np.sort(x)
        os_ = [srt[k - 1] for k in ks]
        rows.append((x, lin, os_))
        kinds.append(kind)
    return rows, kinds, ks


README = r"""# Signal and statistics references, seed @SEED@

scipy @SCIPY@ / numpy @NUMPY@ (Python @PYTHON@) reference values, written by

    /usr/bin/python3 signal_ref.py --seed @SEED@ --out DIR

(`signal_ref.py` is in the peers harness, `../../peers/` beside this folder). All
values are float64 and written with Python `repr` (shortest string that
round-trips, so parsing gives back the exact float64); the integer
parameters are written as integers. Everything is a pure function of the
seed; `manifest.json` holds the versions, every setting and the checks below.

## `resample_poly_4_25/` and `resample_poly_8_25/`

| folder | input | output | call |
|---|---|---|---|
| `resample_poly_4_25/` | 10000 samples at 20 kHz | 1600 samples at 3.2 kHz | `scipy.signal.resample_poly(x, 4, 25)` |
| `resample_poly_8_25/` | 5000 samples at 10 kHz | 1600 samples at 3.2 kHz | `scipy.signal.resample_poly(x, 8, 25)` |

Files in each: `input.csv` (x, one value a line), `output.csv` (y, one value
a line), `taps.csv` (h, 501 values, one a line).

Test signal (0.5 s at the input rate fs): `x(t) = a(t) [sin(w t + phi) +
0.05 sin(5 (w t + phi) + th5)] + e(t)`, `w = 2 pi 50`, `t = n / fs`; a sag:
`a = 0.5` for `0.2 <= t < 0.3` s, else 1 (it scales the harmonic too);
`phi, th5 ~ U[-pi, pi)` and noise `e ~ N(0, 0.005^2)` from numpy
`default_rng(@SEED@)` for 20 kHz and `default_rng(@SEED1@)` for 10 kHz (drawn
in that order: phi, th5, then the noise; the values are in `manifest.json`).

resample_poly with its defaults (`window=('kaiser', 5.0)`, `padtype='constant'`,
`cval=None`, i.e. zero padding) designs, for rates up/down with
`max_rate = max(up, down) = 25` and `half_len = 10 * max_rate = 250`:

    h = scipy.signal.firwin(2 * half_len + 1, 1 / max_rate, window=('kaiser', 5.0)) * up
      = firwin(501, 1/25, window=('kaiser', 5.0)) * 4   (or * 8)

which is `taps.csv` (a linear-phase low-pass FIR with cut-off 1/25 of Nyquist,
i.e. 400 Hz at 20 kHz, 200 Hz at 10 kHz; its sum is `up`, the DC gain of the
upsampler). Then, with `x[m] = 0` outside `0 .. N-1` and `h[k] = 0` outside
`0 .. 500`,

    y[n] = sum_m x[m] * h[n * down - m * up + half_len],   n = 0 .. ceil(N * up / down) - 1

(scipy pads h in front with `down - half_len % down` zeros, filters with
`upfirdn(h, x, up, down)` and drops the first `(half_len + pad) // down`
outputs, which centres the filter exactly: the offset is always `half_len`.)

Checked when the files were written:
* the taps reproduce resample_poly's filter EXACTLY: passing them back as
  `resample_poly(x, up, down, window=taps / up)` (an array window is
  multiplied by `up` inside; dividing by 4 or 8 is exact) gives output
  bit-identical to the default call: @BIT_4@ (4/25), @BIT_8@ (8/25);
* the explicit formula above, evaluated with numpy dot products, matches
  `output.csv` to @FORM_4@ (4/25) and @FORM_8@ (8/25) (summation order only).

The paper resamples its 20 kHz recordings to 3.2 kHz "by polyphase filtering
with a rational factor of 4/25" after "a zero-phase FIR low-pass filter";
`resample_poly(x, 4, 25)` is the scipy form of that (the filter above is
linear-phase and centred, so it adds no delay). The paper does not say which
window it used; these files pin scipy's default.

## `wasserstein.csv`

50 lines, no header. Line layout: `n, u_1 .. u_n, v_1 .. v_n, distance`
(2n + 2 fields; `n` = 5 on lines 1-40, 20 on lines 41-50). `distance =
scipy.stats.wasserstein_distance(u, v)` (no weights): the 1-Wasserstein
distance between the two empirical distributions,

    W1 = integral |U(t) - V(t)| dt
       = sum_k |U(z_k) - V(z_k)| (z_{k+1} - z_k)     over the sorted pooled values z

with U, V the empirical CDFs (right-continuous; this is scipy's own
computation). For equal sizes it equals `mean_i |u_(i) - v_(i)|` over the
sorted samples (agreement with that formula: @W_SORTED@). Kinds of pair, by
line: @W_KINDS@.

## `pearson.csv`

50 lines, no header: `x_1 .. x_640, y_1 .. y_640, r` (1281 fields). x and y
are written with 4 decimals and r was computed from the values as written
(parsed as float64). `r = scipy.stats.pearsonr(x, y)[0]`; scipy @SCIPY@
computes

    xm = x - mean(x),  ym = y - mean(y)
    r  = dot(xm / ||xm||, ym / ||ym||),   clipped to [-1, 1]

(`||.||` = `scipy.linalg.norm`, i.e. the 2-norm). The textbook form
`sum(xm ym) / sqrt(sum(xm^2) sum(ym^2))` agrees to @P_TEXTBOOK@. Kinds of
pair, by line: @P_KINDS@.

## `quantiles.csv`

Header line, then 30 lines: `x0 .. x19` (one sample, S = 20), then
`lin_0.05 .. lin_0.95` = `numpy.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95], method="linear")`,
then `os_0.05 .. os_0.95` = the order statistic `r_(k)`, `k = ceil(alpha * S)`
(1-based, on the sorted sample; the paper's alpha-quantile summary).

* linear (Hyndman & Fan type 7, numpy's default): `h = (S - 1) * alpha`
  (float64 product), `j = floor(h)`, `g = h - j`, `a = x_(j)`, `b = x_(j+1)`
  (0-based sorted values; b = a when j = S - 1); numpy @NUMPY@ evaluates
  `q = a + (b - a) * g` when `g < 0.5` and `q = b - (b - a) * (1 - g)` when
  `g >= 0.5`. Bit-exact agreement needs that same branch; the plain
  `a + (b - a) * g` agrees to @Q_NAIVE@.
* order statistic: with S = 20, k = @KS@ for the five levels. Compute
  `ceil(alpha * S)` exactly. In float64 the exact product of 0.05 and 20 is
  1.0000000000000000555..., which rounds to 1.0, and 0.95 * 20 rounds to
  19.0, so the float product happens to be right for S = 20, but not for
  every S (`0.07 * 100` gives 7.000000000000001, ceil 8). Use an integer rule
  such as `k = ceil(alpha_percent * S / 100)` in integer arithmetic.

Kinds of sample, by line: @Q_KINDS@.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = args.out
    os.makedirs(out, exist_ok=True)
    seed = args.seed
    r4 = resample_case(out, "resample_poly_4_25", 20000.0, 4, 25, seed)
    r8 = resample_case(out, "resample_poly_8_25", 10000.0, 8, 25, seed + 1)
    assert r4["taps_reproduce_resample_poly_bit_for_bit"] and r8["taps_reproduce_resample_poly_bit_for_bit"]

    rng = np.random.default_rng([seed, 1])
    wrows, wkinds = wasserstein_rows(rng)
    w_sorted = 0.0
    with open(os.path.join(out, "wasserstein.csv"), "w") as f:
        for n, u, v, w in wrows:
            f.write(",".join([str(n)] + [r17(a) for a in u] + [r17(a) for a in v] + [r17(w)]) + "\n")
            w_sorted = max(w_sorted, abs(np.mean(np.abs(np.sort(u) - np.sort(v))) - w))

    rng = np.random.default_rng([seed, 2])
    prows, pkinds = pearson_rows(rng)
    p_text = 0.0
    with open(os.path.join(out, "pearson.csv"), "w") as f:
        for xs, ys, r in prows:
            f.write(",".join(xs + ys + [r17(r)]) + "\n")
            xv = np.array([float(s) for s in xs])
            yv = np.array([float(s) for s in ys])
            xm, ym = xv - xv.mean(), yv - yv.mean()
            p_text = max(p_text, abs(np.sum(xm * ym) / math.sqrt(np.sum(xm * xm) * np.sum(ym * ym)) - r))

    rng = np.random.default_rng([seed, 3])
    qrows, qkinds, ks = quantile_rows(rng)
    q_naive = 0.0
    alphas = [float(a) for a in ALPHAS]
    with open(os.path.join(out, "quantiles.csv"), "w") as f:
        f.write(",".join([f"x{i}" for i in range(Q_SIZE)] + [f"lin_{a}" for a in ALPHAS]
                         + [f"os_{a}" for a in ALPHAS]) + "\n")
        for x, lin, os_ in qrows:
            f.write(",".join([r17(v) for v in x] + [r17(v) for v in lin] + [r17(v) for v in os_]) + "\n")
            srt = np.sort(x)
            for a, q in zip(alphas, lin):
                h = (Q_SIZE - 1) * a
                j = math.floor(h)
                b = srt[min(j + 1, Q_SIZE - 1)]
                q_naive = max(q_naive, abs(srt[j] + (b - srt[j]) * (h - j) - q))

    def kinds_text(kinds, first=1):
        """'1-24 normal; 25-28 relu ...' (line numbers start at `first`)."""
        runs, start = [], 0
        for i in range(1, len(kinds) + 1):
            if i == len(kinds) or kinds[i] != kinds[start]:
                runs.append(f"{start + first}" + (f"-{i - 1 + first}" if i - 1 > start else "")
                            + f" {kinds[start]}")
                start = i
        return "; ".join(runs)

    def fmt(v):
        return "0 (identical)" if v == 0 else "%.2g" % v

    manifest = {
        "seed": seed,
        "command": f"signal_ref.py --seed {seed} --out DIR",
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__},
        "test_signal": {"f0_hz": F0, "duration_s": DURATION, "sag": {"start_s": SAG[0], "end_s": SAG[1],
                                                                     "amplitude": SAG[2]},
                        "h5": H5, "noise_std": NOISE},
        "resample_poly": [r4, r8],
        "wasserstein": {"rows": len(wrows), "kinds": wkinds,
                        "sorted_formula_max_abs_diff": float(w_sorted),
                        "rng": f"numpy default_rng([{seed}, 1])"},
        "pearson": {"rows": len(prows), "length": 640, "decimals": 4, "kinds": pkinds,
                    "textbook_formula_max_abs_diff": float(p_text), "rng": f"numpy default_rng([{seed}, 2])"},
        "quantiles": {"rows": len(qrows), "size": Q_SIZE, "alphas": ALPHAS, "order_statistic_k": ks,
                      "method": "numpy.quantile(method='linear')", "kinds": qkinds,
                      "naive_lerp_max_abs_diff": float(q_naive), "rng": f"numpy default_rng([{seed}, 3])"},
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    vals = {
        "SEED": str(seed), "SEED1": str(seed + 1), "SCIPY": scipy.__version__, "NUMPY": np.__version__,
        "PYTHON": platform.python_version(),
        "BIT_4": "yes" if r4["taps_reproduce_resample_poly_bit_for_bit"] else "NO",
        "BIT_8": "yes" if r8["taps_reproduce_resample_poly_bit_for_bit"] else "NO",
        "FORM_4": fmt(r4["explicit_formula_max_abs_diff"]), "FORM_8": fmt(r8["explicit_formula_max_abs_diff"]),
        "W_SORTED": fmt(w_sorted), "W_KINDS": kinds_text(wkinds),
        "P_TEXTBOOK": fmt(p_text),
        "P_KINDS": "1-20 correlated, y = rho x + sqrt(1 - rho^2) e with rho = -0.95 + 0.1 (line - 1); "
                   + kinds_text(pkinds[20:], first=21),
        "Q_NAIVE": fmt(q_naive), "KS": ", ".join(str(k) for k in ks), "Q_KINDS": kinds_text(qkinds),
    }
    text = README
    for k, v in vals.items():
        text = text.replace("@" + k + "@", v)
    assert "@" not in text, [ln for ln in text.splitlines() if "@" in ln]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(text)
    print(json.dumps({"signal": out, "seed": seed,
                      "bit_exact_taps": [r4["taps_reproduce_resample_poly_bit_for_bit"],
                                         r8["taps_reproduce_resample_poly_bit_for_bit"]],
                      "formula": [r4["explicit_formula_max_abs_diff"], r8["explicit_formula_max_abs_diff"]],
                      "w_sorted": w_sorted, "p_text": p_text, "q_naive": q_naive}))


if __name__ == "__main__":
    main(sys.argv[1:])
