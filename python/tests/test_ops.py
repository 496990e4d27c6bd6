"""Every operation of wgc.h through the package, on both backends, against
numpy in float64 under wgc.h's accuracy statements. Sizes are small:
lavapipe runs the WebGPU kernels on the CPU."""

import math

import numpy as np
import pytest
import wgc

f32 = np.float32
erf = np.vectorize(math.erf, otypes=[np.float64])


def close(got, want, rel=1e-5, abs_=1e-6):
    want = np.asarray(want, np.float64)
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want)
    bound = rel * np.abs(want) + abs_
    worst = np.max(err - bound) if err.size else 0
    assert worst <= 0, f"max error {np.max(err)} beyond the bound by {worst}"


def upload(ctx, x):
    return ctx.array(np.asarray(x, f32))


# ---- GEMM ------------------------------------------------------------------
def gemm_bound(k, alpha, a, b, beta=0.0, c=None):
    b_ = 1e-5 * k * abs(alpha) * np.max(np.abs(a)) * np.max(np.abs(b))
    if c is not None:
        b_ += 1e-6 * abs(beta) * np.max(np.abs(c))
    return b_ + 1e-6


@pytest.mark.parametrize("layout,ta,tb", [(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS),
                                          (wgc.ROW_MAJOR, wgc.TRANS, wgc.NO_TRANS),
                                          (wgc.COL_MAJOR, wgc.NO_TRANS, wgc.TRANS)])
def test_gemm(ctx, rng, layout, ta, tb):
    m, n, k, alpha, beta = 7, 5, 11, 1.5, -0.5
    a = rng.uniform(-1, 1, (m, k))
    b = rng.uniform(-1, 1, (k, n))
    c = rng.uniform(-1, 1, (m, n))
    want = alpha * a @ b + beta * c
    # Stored matrices: transposed when op is TRANS; column-major stores the
    # transpose of the row-major array.
    sa = a.T if ta == wgc.TRANS else a
    sb = b.T if tb == wgc.TRANS else b
    if layout == wgc.COL_MAJOR:
        sa, sb, sc = sa.T, sb.T, c.T
    else:
        sc = c
    da, db, dc = upload(ctx, sa), upload(ctx, sb), upload(ctx, sc)
    ctx.gemm(layout, ta, tb, m, n, k, alpha, da, sa.shape[1], db, sb.shape[1],
             beta, dc, sc.shape[1])
    got = dc.numpy()
    if layout == wgc.COL_MAJOR:
        got = got.T
    close(got, want, 0, gemm_bound(k, alpha, a, b, beta, c))


def test_gemm_batched(ctx, rng):
    batch, m, n, k = 3, 4, 6, 5
    a = rng.uniform(-1, 1, (batch, m, k))
    b = rng.uniform(-1, 1, (k, n))  # stride 0: shared by every batch
    da, db, dc = upload(ctx, a), upload(ctx, b), ctx.empty((batch, m, n))
    ctx.gemm_batched(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, m, n, k, 2.0,
                     da, k, m * k, db, n, 0, 0.0, dc, n, m * n, batch)
    close(dc.numpy(), 2.0 * a @ b, 0, gemm_bound(k, 2.0, a, b))


def test_gemm_ex(ctx, rng):
    m, n, k = 6, 5, 9
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    bias = rng.uniform(-1, 1, n)
    da, db, dbias, dc = upload(ctx, a), upload(ctx, b), upload(ctx, bias), ctx.empty((m, n))
    ep = wgc.GemmEpilogue(bias=dbias, bias_kind=wgc.BIAS_PER_COLUMN,
                          activation=wgc.ACTIVATION_GELU)
    ctx.gemm_ex(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, m, n, k, 1.0, da, k,
                db, n, 0.0, dc, n, ep)
    pre = a @ b + bias
    want = 0.5 * pre * (1 + erf(pre / math.sqrt(2)))
    close(dc.numpy(), want, 1e-5, 1.13 * gemm_bound(k, 1.0, a, b) + 1e-6)
    # ep omitted is the plain GEMM
    ctx.gemm_ex(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, m, n, k, 1.0, da, k,
                db, n, 0.0, dc, n)
    close(dc.numpy(), a @ b, 0, gemm_bound(k, 1.0, a, b))


def test_gemm_batched_ex(ctx, rng):
    batch, m, n, k = 2, 3, 4, 5
    a, b = rng.uniform(-1, 1, (batch, m, k)), rng.uniform(-1, 1, (batch, k, n))
    bias = rng.uniform(-1, 1, m)
    da, db, dbias = upload(ctx, a), upload(ctx, b), upload(ctx, bias)
    dc = ctx.empty((batch, m, n))
    ep = wgc.GemmEpilogue(bias=dbias.ptr, bias_kind=wgc.BIAS_PER_ROW,
                          activation=wgc.ACTIVATION_RELU)
    ctx.gemm_batched_ex(wgc.ROW_MAJOR, wgc.NO_TRANS, wgc.NO_TRANS, m, n, k, 1.0,
                        da, k, m * k, db, n, k * n, 0.0, dc, n, m * n, batch, ep=ep)
    want = np.maximum(a @ b + bias[None, :, None], 0)
    close(dc.numpy(), want, 0, gemm_bound(k, 1.0, a, b) + 1e-6)


# ---- conv2d and pool2d ------------------------------------------------------
def conv_ref(x, w, bias, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p = (h + 2 * pad - dil * (r - 1) - 1) // stride + 1
    q = (wd + 2 * pad - dil * (s - 1) - 1) // stride + 1
    out = np.zeros((n, k, p, q))
    kg = k // groups
    for g in range(groups):
        for i in range(r):
            for j in range(s):
                win = xp[:, g * cg:(g + 1) * cg,
                         i * dil:i * dil + stride * (p - 1) + 1:stride,
                         j * dil:j * dil + stride * (q - 1) + 1:stride]
                out[:, g * kg:(g + 1) * kg] += np.einsum(
                    "nchw,kc->nkhw", win, w[g * kg:(g + 1) * kg, :, i, j])
    return out + bias[None, :, None, None]


@pytest.mark.parametrize("groups,stride,pad,dil", [(1, 1, 1, 1), (2, 2, 0, 2)])
def test_conv2d(ctx, rng, groups, stride, pad, dil):
    d = wgc.Conv2dDesc(n=2, c=4, h=7, w=6, k=6, r=3, s=2, stride_h=stride,
                       stride_w=stride, pad_h=pad, pad_w=pad, dilation_h=dil,
                       dilation_w=dil, groups=groups)
    p, q = wgc.conv2d_output_size(d)
    x = rng.uniform(-1, 1, (2, 4, 7, 6))
    w = rng.uniform(-1, 1, (6, 4 // groups, 3, 2))
    bias = rng.uniform(-1, 1, 6)
    want = conv_ref(x, w, bias, stride, pad, dil, groups)
    assert (p, q) == want.shape[2:]
    out = ctx.empty((2, 6, p, q))
    ctx.conv2d(d, upload(ctx, x), upload(ctx, w), upload(ctx, bias), out)
    kk = 4 // groups * 3 * 2
    close(out.numpy(), want, 0, 1e-5 * kk + 1e-6 * 1 + 1e-6)


def pool_ref(x, r, s, stride, pad, mode):
    n, c, h, w = x.shape
    p = (h + 2 * pad - r) // stride + 1
    q = (w + 2 * pad - s) // stride + 1
    out = np.zeros((n, c, p, q))
    for y in range(p):
        for z in range(q):
            y0, z0 = y * stride - pad, z * stride - pad
            win = x[:, :, max(y0, 0):min(y0 + r, h), max(z0, 0):min(z0 + s, w)]
            out[:, :, y, z] = win.max(axis=(2, 3)) if mode == wgc.POOL_MAX else win.mean(axis=(2, 3))
    return out


@pytest.mark.parametrize("mode", [wgc.POOL_MAX, wgc.POOL_AVG])
def test_pool2d(ctx, rng, mode):
    d = wgc.Pool2dDesc(n=1, c=3, h=7, w=8, r=3, s=3, stride_h=2, stride_w=2,
                       pad_h=1, pad_w=1, mode=mode)
    p, q = wgc.pool2d_output_size(d)
    x = rng.uniform(-1, 1, (1, 3, 7, 8)).astype(f32).astype(np.float64)
    want = pool_ref(x, 3, 3, 2, 1, mode)
    assert (p, q) == want.shape[2:]
    out = ctx.empty((1, 3, p, q))
    ctx.pool2d(d, upload(ctx, x), out)
    close(out.numpy(), want, 0 if mode == wgc.POOL_MAX else 1e-6,
          0 if mode == wgc.POOL_MAX else 1e-6)


# ---- attention --------------------------------------------------------------
@pytest.mark.parametrize("causal", [wgc.CAUSAL_NONE, wgc.CAUSAL_TOP_LEFT])
def test_attention(ctx, rng, causal):
    b, h, hkv, sq, skv, dh = 1, 4, 2, 5, 7, 8
    q = rng.uniform(-1, 1, (b, h, sq, dh))
    k = rng.uniform(-1, 1, (b, hkv, skv, dh))
    v = rng.uniform(-1, 1, (b, hkv, skv, dh))
    scale = 1 / math.sqrt(dh)
    kr, vr = np.repeat(k, h // hkv, axis=1), np.repeat(v, h // hkv, axis=1)
    s = scale * q @ kr.transpose(0, 1, 3, 2)
    if causal == wgc.CAUSAL_TOP_LEFT:
        s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None], s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True)) @ vr
    d = wgc.AttentionDesc(batch=b, heads=h, heads_kv=hkv, seq_q=sq, seq_kv=skv,
                          head_dim=dh, scale=scale, causal=causal)
    o = ctx.empty((b, h, sq, dh))
    ctx.attention(d, upload(ctx, q), upload(ctx, k), upload(ctx, v), o)
    close(o.numpy(), want, 0, 1e-5 * dh + 4e-6 + 1e-6)


# ---- reductions -------------------------------------------------------------
def lse(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))).squeeze(axis)


REDUCE_REF = {
    "sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean, "prod": np.prod,
    "sum_square": lambda x, axis: np.sum(x * x, axis=axis),
    "l1": lambda x, axis: np.sum(np.abs(x), axis=axis),
    "l2": lambda x, axis: np.sqrt(np.sum(x * x, axis=axis)),
    "log_sum_exp": lse,
}


def test_reduce_refs_cover_every_op():
    assert set(REDUCE_REF) == set(wgc.REDUCE_OPS)


@pytest.mark.parametrize("name", sorted(wgc.REDUCE_OPS))
def test_reduce(ctx, rng, name):
    shape = (3, 5, 4)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
    dx = upload(ctx, x)
    for axis in range(3):
        out = ctx.empty(tuple(d for i, d in enumerate(shape) if i != axis))
        ctx.reduce(wgc.REDUCE_OPS[name], dx, out, shape, axis)
        close(out.numpy(), REDUCE_REF[name](x, axis=axis), 1e-5, 1e-6)


def test_reduce_axes(ctx, rng):
    shape = (3, 4, 5)
    x = rng.uniform(-1, 1, shape)
    out = ctx.empty((4,))
    ctx.reduce_axes(wgc.REDUCE_MEAN, upload(ctx, x), out, shape, [2, 0])
    close(out.numpy(), x.mean(axis=(0, 2)), 1e-5, 1e-6)


@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_argmax_argmin(ctx, rng, which):
    shape = (4, 6)
    x = rng.uniform(-1, 1, shape).astype(f32)
    x[1, 2] = x[1, 4] = 5 if which == "argmax" else -5  # ties: the first
    out = ctx.empty((4,), dtype=np.int32)
    getattr(ctx, which)(upload(ctx, x), out, shape, 1)
    got = out.numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, getattr(np, which)(x, axis=1))


# ---- element-wise ------------------------------------------------------------
def sig(x):
    return 1 / (1 + np.exp(-x))


# name -> (float64 reference, input domain, relative bound)
UNARY_REF = {
    "relu": (lambda x: np.maximum(x, 0), "any", 2e-6),
    "sigmoid": (sig, "any", 1e-5),
    "tanh": (np.tanh, "any", 1e-5),
    "exp": (np.exp, "any", 1e-5),
    "log": (np.log, "pos", 1e-5),
    "sqrt": (np.sqrt, "pos", 2e-6),
    "abs": (np.abs, "any", 2e-6),
    "neg": (np.negative, "any", 2e-6),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), "any", 1e-5),
    "silu": (lambda x: x * sig(x), "any", 1e-5),
    "gelu_tanh": (lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), "any", 1e-5),
    "erf": (erf, "any", 1e-5),
    "reciprocal": (lambda x: 1 / x, "pos", 2e-6),
    "floor": (np.floor, "any", 0),
    "ceil": (np.ceil, "any", 0),
    "round": (np.round, "any", 0),
    "sin": (np.sin, "any", 1e-5),
    "cos": (np.cos, "any", 1e-5),
    "softplus": (lambda x: np.log1p(np.exp(x)), "any", 1e-5),
    "leaky_relu": (lambda x: np.where(x < 0, 0.01 * x, x), "any", 2e-6),
    "elu": (lambda x: np.where(x < 0, np.expm1(x), x), "any", 1e-5),
    "hard_sigmoid": (lambda x: np.clip(0.2 * x + 0.5, 0, 1), "any", 2e-6),
    "clip": (lambda x: x, "any", 0),
}


def test_unary_refs_cover_every_op():
    assert set(UNARY_REF) == set(wgc.UNARY_OPS)


@pytest.mark.parametrize("name", sorted(wgc.UNARY_OPS))
def test_unary(ctx, rng, name):
    ref, domain, rel = UNARY_REF[name]
    x = rng.uniform(-4, 4, 37)
    x[:4] = [-2.5, -0.5, 0.5, 1.5]  # halves: round goes to even
    if domain == "pos":
        x = np.abs(x) + 0.1
    x = x.astype(f32).astype(np.float64)
    dx, out = upload(ctx, x), ctx.empty(37)
    ctx.unary(wgc.UNARY_OPS[name], dx, out, 37)
    close(out.numpy(), ref(x), rel, 1e-6 if rel else 0)


def test_unary_params(ctx, rng):
    x = rng.uniform(-3, 3, 29)
    dx, out = upload(ctx, x), ctx.empty(29)
    ctx.unary_params(wgc.UNARY_CLIP, -0.5, 1.25, dx, out, 29)
    close(out.numpy(), np.clip(x.astype(f32), -0.5, 1.25), 0, 0)
    ctx.unary_params(wgc.UNARY_LEAKY_RELU, 0.25, 0.0, dx, dx, 29)  # in place
    close(dx.numpy(), np.where(x < 0, 0.25 * x, x), 2e-6, 1e-6)


BINARY_REF = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
              "div": np.divide, "max": np.maximum, "min": np.minimum,
              "pow": np.power}


def test_binary_refs_cover_every_op():
    assert set(BINARY_REF) == set(wgc.BINARY_OPS)


@pytest.mark.parametrize("name", sorted(wgc.BINARY_OPS))
def test_binary(ctx, rng, name):
    a = rng.uniform(0.2, 3, 41).astype(f32).astype(np.float64)
    b = (rng.uniform(-2, 2, 41) if name != "div" else rng.uniform(0.5, 2, 41))
    b = b.astype(f32).astype(np.float64)
    da, db, out = upload(ctx, a), upload(ctx, b), ctx.empty(41)
    ctx.binary(wgc.BINARY_OPS[name], da, db, out, 41)
    close(out.numpy(), BINARY_REF[name](a, b), 1e-5, 1e-6)


def test_binary_broadcast(ctx, rng):
    a, b = rng.uniform(-1, 1, (3, 1, 4)), rng.uniform(-1, 1, (5, 1))
    out = ctx.empty((3, 5, 4))
    ctx.binary_broadcast(wgc.BINARY_MUL, upload(ctx, a), a.shape,
                         upload(ctx, b), b.shape, out)
    close(out.numpy(), a * b, 2e-6, 1e-6)


def test_where(ctx, rng):
    cond = (rng.uniform(-1, 1, (4, 1)) > 0).astype(f32)
    a, b = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, ())
    out = ctx.empty((4, 3))
    ctx.where(upload(ctx, cond), cond.shape, upload(ctx, a), a.shape,
              upload(ctx, b), (), out)
    np.testing.assert_array_equal(out.numpy(), np.where(cond != 0, a.astype(f32), f32(b)))


# ---- normalization and rotary -------------------------------------------------
def test_softmax_log_softmax(ctx, rng):
    shape = (3, 7)
    x = rng.uniform(-5, 5, shape)
    dx, out = upload(ctx, x), ctx.empty(shape)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ctx.softmax(dx, out, shape, 1)
    close(out.numpy(), e / e.sum(axis=1, keepdims=True), 1e-5, 1e-6)
    ctx.log_softmax(dx, out, shape, 1)
    close(out.numpy(), x - lse(x, 1)[:, None], 1e-5, 2e-6)


def test_layer_norm_rms_norm(ctx, rng):
    shape = (4, 3, 5)
    x = rng.uniform(-2, 2, shape)
    scale, bias = rng.uniform(0.5, 1.5, (3, 5)), rng.uniform(-1, 1, (3, 5))
    dx, out = upload(ctx, x), ctx.empty(shape)
    ds, db = upload(ctx, scale), upload(ctx, bias)
    g = x.reshape(4, 15)
    mean, var = g.mean(1, keepdims=True), g.var(1, keepdims=True)
    want = ((g - mean) / np.sqrt(var + 1e-5)).reshape(shape) * scale + bias
    ctx.layer_norm(dx, ds, db, out, shape, 1, 1e-5)
    close(out.numpy(), want, 1e-5, 1e-5)
    ctx.layer_norm(dx, None, 0, out, shape, 2, 1e-5)  # no scale, no bias
    m2, v2 = x.mean(2, keepdims=True), x.var(2, keepdims=True)
    close(out.numpy(), (x - m2) / np.sqrt(v2 + 1e-5), 1e-5, 1e-5)
    ctx.rms_norm(dx, ds, out, shape, 1, 1e-6)
    rms = np.sqrt((g * g).mean(1, keepdims=True) + 1e-6)
    close(out.numpy(), (g / rms).reshape(shape) * scale, 1e-5, 1e-6)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(ctx, rng, interleaved):
    b, s, h, dh, rd, maxp = 2, 3, 2, 8, 6, 10
    x = rng.uniform(-1, 1, (b, s, h, dh))
    pos = rng.integers(0, maxp, (b, s)).astype(np.int32)
    ang = rng.uniform(0, 6, (maxp, rd // 2))
    cos, sin = np.cos(ang).astype(f32), np.sin(ang).astype(f32)
    c = cos.astype(np.float64)[pos][:, :, None, :]
    sn = sin.astype(np.float64)[pos][:, :, None, :]
    want = x.astype(f32).astype(np.float64).copy()
    xr = want[..., :rd]
    if interleaved:
        x1, x2 = xr[..., 0::2].copy(), xr[..., 1::2].copy()
        xr[..., 0::2], xr[..., 1::2] = x1 * c - x2 * sn, x2 * c + x1 * sn
    else:
        x1, x2 = xr[..., :rd // 2].copy(), xr[..., rd // 2:].copy()
        xr[..., :rd // 2], xr[..., rd // 2:] = x1 * c - x2 * sn, x2 * c + x1 * sn
    d = wgc.RotaryDesc(batch=b, seq=s, heads=h, head_dim=dh, rotary_dim=rd,
                       interleaved=interleaved, layout=wgc.ROTARY_BSHD,
                       max_positions=maxp)
    out = ctx.empty(x.shape)
    ctx.rotary_embedding(d, upload(ctx, x), ctx.array(pos), ctx.array(cos),
                         ctx.array(sin), out)
    close(out.numpy(), want, 0, 4e-7 * 2 * 2 + 1e-7)


# ---- data movement ------------------------------------------------------------
def test_copy_strided_transpose(ctx, rng):
    x = rng.uniform(-1, 1, (3, 4)).astype(f32)
    out = ctx.empty((4, 3))
    ctx.copy_strided(out, [1, 3], upload(ctx, x), [4, 1], [3, 4])
    np.testing.assert_array_equal(out.numpy(), x.T)


def test_movement_conv_pool_typed(ctx, rng):
    # copy_strided_ex transposes f16 into bf16 (as cast rounds it)
    x = rng.uniform(-2, 2, (4, 6)).astype(np.float16)
    t = ctx.empty(12)  # 24 halves
    ctx.copy_strided_ex(t, wgc.DTYPE_BF16, [1, 4], ctx.array(x.view(np.int32)),
                        wgc.DTYPE_F16, [6, 1], [4, 6])
    bits = t.numpy().view(np.uint16).astype(np.uint32) << 16
    close(bits.view(np.float32).reshape(6, 4), x.astype(np.float64).T,
          2 ** -8, 0)
    # rotary on f16 with f16 caches into f16
    d = wgc.RotaryDesc(batch=1, seq=2, heads=1, head_dim=4, input_type=wgc.DTYPE_F16,
                       output_type=wgc.DTYPE_F16, cache_type=wgc.DTYPE_F16)
    xr = rng.uniform(-1, 1, (2, 4)).astype(np.float16)
    ang = rng.uniform(0, 6, (2, 2))
    cos, sin = np.cos(ang).astype(np.float16), np.sin(ang).astype(np.float16)
    out = ctx.empty(4)
    ctx.rotary_embedding(d, ctx.array(xr.view(np.int32)), None,
                         ctx.array(cos.view(np.int32)),
                         ctx.array(sin.view(np.int32)), out)
    g, c, sn = (a.astype(np.float64) for a in (xr, cos, sin))
    want = np.concatenate([g[:, :2] * c - g[:, 2:] * sn,
                           g[:, :2] * sn + g[:, 2:] * c], 1)
    close(out.numpy().view(np.float16).reshape(2, 4), want, 2 ** -10, 1e-6)
    # conv2d: f16 input and filter, f32 bias, bf16 output
    cd = wgc.Conv2dDesc(n=1, c=2, h=4, w=4, k=2, r=3, s=3, pad_h=1, pad_w=1,
                        input_type=wgc.DTYPE_F16, filter_type=wgc.DTYPE_F16,
                        output_type=wgc.DTYPE_BF16)
    xi = rng.uniform(-1, 1, (1, 2, 4, 4)).astype(np.float16)
    w = rng.uniform(-1, 1, (2, 2, 3, 3)).astype(np.float16)
    bias = rng.uniform(-1, 1, 2)
    y = ctx.empty(16)  # 32 halves
    ctx.conv2d(cd, ctx.array(xi.ravel().view(np.int32)),
               ctx.array(w.ravel().view(np.int32)),
               upload(ctx, bias), y)
    want = conv_ref(xi.astype(np.float64), w.astype(np.float64),
                    bias.astype(f32), 1, 1, 1, 1)
    bits = y.numpy().view(np.uint16).astype(np.uint32) << 16
    close(bits.view(np.float32).reshape(want.shape), want, 2 ** -8, 1e-4)
    # pool2d: max of bf16 into f16
    pd = wgc.Pool2dDesc(n=1, c=1, h=4, w=4, r=2, s=2, stride_h=2, stride_w=2,
                        input_type=wgc.DTYPE_BF16, output_type=wgc.DTYPE_F16)
    xb = (rng.uniform(-1, 1, 16).astype(f32).view(np.uint32) >> 16).astype(np.uint16)
    pm = ctx.empty(2)
    ctx.pool2d(pd, ctx.array(xb.view(np.int32)), pm)
    v = (xb.astype(np.uint32) << 16).view(np.float32).reshape(1, 1, 4, 4)
    want = pool_ref(v.astype(np.float64), 2, 2, 2, 0, wgc.POOL_MAX)
    close(pm.numpy().view(np.float16).reshape(want.shape), want, 2 ** -11, 0)


def test_gather(ctx, rng):
    data = rng.uniform(-1, 1, (5, 3)).astype(f32)
    idx = np.array([4, 0, -1, 2, 7], np.int32)  # 7 is outside: zeros
    out = ctx.empty((5, 3))
    ctx.gather(ctx.array(data), data.shape, 0, ctx.array(idx), len(idx), out)
    want = np.concatenate([data[[4, 0, -1, 2]], np.zeros((1, 3), f32)])
    np.testing.assert_array_equal(out.numpy(), want)


def test_gather_ex_f16_table(ctx, rng):
    # an f16 table (its halves travel as int32 words) into f32 rows
    data = rng.uniform(-1, 1, (5, 4)).astype(np.float16)
    idx = np.array([3, -5, 9], np.int32)  # 9 is outside: zeros
    out = ctx.empty((3, 4))
    ctx.gather_ex(ctx.array(data.view(np.int32)), wgc.DTYPE_F16, data.shape, 0,
                  ctx.array(idx), len(idx), out, wgc.DTYPE_F32)
    want = np.concatenate([data[[3, 0]].astype(f32), np.zeros((1, 4), f32)])
    np.testing.assert_array_equal(out.numpy(), want)


def test_binary_ex_f16(ctx, rng):
    # f16 a and out, f32 b: f32 arithmetic rounded once into f16
    a = rng.uniform(-2, 2, 6).astype(np.float16)
    # b holds f16 values: the product is exact in f32, rounded once to f16
    b = rng.uniform(-2, 2, 6).astype(np.float16).astype(f32)
    out = ctx.empty(3)  # six halves
    ctx.binary_ex(wgc.BINARY_OPS["mul"], ctx.array(a.view(np.int32)), wgc.DTYPE_F16,
                  ctx.array(b), wgc.DTYPE_F32, out, wgc.DTYPE_F16, 6)
    want = (a.astype(np.float64) * b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(out.numpy().view(np.float16), want)


def test_norm_ex_f16(ctx, rng):
    # f16 input, scale and output of LayerNorm; bf16 softmax output
    x = rng.uniform(-2, 2, (4, 8)).astype(np.float16)
    scale = rng.uniform(0.5, 1.5, 8).astype(np.float16)
    out = ctx.empty(16)  # 32 halves
    ctx.layer_norm_ex(ctx.array(x.view(np.int32)), wgc.DTYPE_F16,
                      ctx.array(scale.view(np.int32)), wgc.DTYPE_F16, None,
                      wgc.DTYPE_F32, out, wgc.DTYPE_F16, x.shape, 1, 1e-5)
    g = x.astype(np.float64)
    mean, var = g.mean(1, keepdims=True), g.var(1, keepdims=True)
    want = (g - mean) / np.sqrt(var + 1e-5) * scale.astype(np.float64)
    got = out.numpy().view(np.float16).reshape(4, 8).astype(np.float64)
    close(got, want, 1e-3, 1e-3)  # half an f16 ulp beyond the f32 bound
    sm = ctx.empty(16)
    ctx.softmax_ex(ctx.array(x.view(np.int32)), wgc.DTYPE_F16, sm,
                   wgc.DTYPE_BF16, x.shape, 1)
    bits = sm.numpy().view(np.uint16).astype(np.uint32) << 16
    e = np.exp(g - g.max(1, keepdims=True))
    close(bits.view(np.float32).reshape(4, 8), e / e.sum(1, keepdims=True),
          4e-3, 1e-6)


def test_reduce_ex_f16(ctx, rng):
    # f16 input: sums into f32 and into f16 (rounded once from the f32 sum)
    x = rng.uniform(-2, 2, (4, 10)).astype(np.float16)
    dx = ctx.array(x.view(np.int32))
    out, half = ctx.empty(4), ctx.empty(2)  # four floats, four halves
    ctx.reduce_ex(wgc.REDUCE_OPS["sum"], dx, wgc.DTYPE_F16, out, wgc.DTYPE_F32,
                  x.shape, 1)
    want = x.astype(np.float64).sum(1)
    close(out.numpy(), want, 1e-6, 1e-6)
    ctx.reduce_axes_ex(wgc.REDUCE_OPS["max"], dx, wgc.DTYPE_F16, half,
                       wgc.DTYPE_F16, x.shape, [1])
    np.testing.assert_array_equal(half.numpy().view(np.float16), x.max(1))


def test_copy_upload_download_offsets(ctx, rng):
    x = rng.uniform(-1, 1, 16).astype(f32)
    src, dst = ctx.array(x), ctx.empty(16)
    ctx.copy(dst.ptr + 4 * 8, src.ptr, 4 * 8)  # addresses with offsets
    ctx.upload(dst.ptr, x[8:12])
    host = np.zeros(4, f32)
    ctx.download(host, dst.ptr + 4 * 9, 16)
    np.testing.assert_array_equal(host, x[1:5])
    ctx.synchronize()
    ctx.poll()
    want = np.zeros(16, f32)
    want[:4], want[8:] = x[8:12], x[:8]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_attention_strides_and_mask(ctx, rng):
    # Q and O in [batch, seq, heads, dim] through the nested stride structs,
    # and a shared additive mask row.
    b, h, sq, skv, dh = 2, 2, 3, 4, 4
    q = rng.uniform(-1, 1, (b, sq, h, dh))
    k, v = rng.uniform(-1, 1, (b, h, skv, dh)), rng.uniform(-1, 1, (b, h, skv, dh))
    mask = rng.uniform(-2, 0, skv)
    s = 0.5 * np.einsum("bqhd,bhkd->bhqk", q, k) + mask
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = np.einsum("bhqk,bhkd->bqhd", e / e.sum(axis=-1, keepdims=True), v)
    bshd = wgc.AttentionStrides(batch=sq * h * dh, head=dh, seq=h * dh)
    d = wgc.AttentionDesc(batch=b, heads=h, seq_q=sq, seq_kv=skv, head_dim=dh,
                          scale=0.5, q_stride=bshd, o_stride=bshd)
    dmask = upload(ctx, mask)
    d.mask = dmask  # an array where C takes an address
    assert d.mask == dmask.ptr and d.q_stride == bshd
    o = ctx.empty((b, sq, h, dh))
    ctx.attention(d, upload(ctx, q), upload(ctx, k), upload(ctx, v), o)
    close(o.numpy(), want, 0, 1e-5 * dh + 4e-6 + 1e-6 * 2 + 1e-6)


def test_attention_f16_kv_cache(ctx, rng):
    # An f16 KV cache allocated for 8 keys read in place with seq_kv 5, f32
    # Q, an f16 O: the f32 bound on the f16 values plus half an f16 ulp.
    h, sq, skv, cap, dh = 2, 2, 5, 8, 8
    q = rng.uniform(-1, 1, (h, sq, dh))
    k = rng.uniform(-1, 1, (h, cap, dh)).astype(np.float16)
    v = rng.uniform(-1, 1, (h, cap, dh)).astype(np.float16)
    kk, vv = k[:, :skv].astype(np.float64), v[:, :skv].astype(np.float64)
    s = 0.5 * np.einsum("hqd,hkd->hqk", q, kk)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    want = np.einsum("hqk,hkd->hqd", e / e.sum(axis=-1, keepdims=True), vv)
    st = wgc.AttentionStrides(batch=h * cap * dh, head=cap * dh, seq=dh)
    d = wgc.AttentionDesc(batch=1, heads=h, seq_q=sq, seq_kv=skv, head_dim=dh,
                          scale=0.5, k_stride=st, v_stride=st,
                          k_type=wgc.DTYPE_F16, v_type=wgc.DTYPE_F16,
                          o_type=wgc.DTYPE_F16)
    o = ctx.empty(h * sq * dh // 2)  # halves, two a word
    ctx.attention(d, upload(ctx, q), ctx.array(k.view(np.int32)),
                  ctx.array(v.view(np.int32)), o)
    got = o.numpy().view(np.float16).reshape(h, sq, dh).astype(np.float64)
    close(got, want, 2 ** -11, 1e-5 * dh + 4e-6 + 1e-6)
    d.k_type = wgc.DTYPE_Q8_0
    with pytest.raises(wgc.WgcError, match="k_type q8_0"):
        ctx.attention(d, upload(ctx, q), ctx.array(k.view(np.int32)),
                      ctx.array(v.view(np.int32)), o)


def test_empty_arrays(ctx):
    a, out = ctx.empty((0, 3)), ctx.empty((3, 0))
    assert a.nbytes == 0 and a.numpy().shape == (0, 3)
    ctx.unary(wgc.UNARY_EXP, a, out, 0)  # an empty output is a no-op
    assert ctx.array(np.zeros((2, 0), np.int32)).numpy().dtype == np.int32


def test_options_split_path(rng):
    # A 4 KiB binding window makes wgc split operations (WebGPU), and two
    # CPU threads: the options reach wgc_create.
    x = rng.uniform(-1, 1, (40, 50)).astype(f32)
    for backend in ("cpu", "webgpu"):
        with wgc.Context(backend=backend, cpu_threads=2, max_binding_bytes=4096) as ctx:
            out = ctx.empty(50)
            ctx.reduce(wgc.REDUCE_SUM, ctx.array(x), out, x.shape, 0)
            close(out.numpy(), x.astype(np.float64).sum(0), 1e-6, 1e-6)
            if backend == "cpu":
                assert "2 threads" in ctx.adapter_name
