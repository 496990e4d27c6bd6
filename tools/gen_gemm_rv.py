#!/usr/bin/env python3
"""Writes kernels/gemm_rv.wgsl: the register-block GEMM kernel, its rows
and column groups written out up to the largest block (16 rows by 4 vec4
column groups), each guarded by a constant condition on TM and TV that the
shader compiler folds. Run from the repository root after changing it."""

MAX_ROWS = 16
MAX_GROUPS = 4

HEADER = """\
// Register-block GEMM without workgroup memory (written by
// tools/gen_gemm_rv.py). Each invocation computes TM (1 to 16) rows by TV
// (1 to 4) vec4 column groups of C straight from memory, over the grid of
// the tiled kernel (x: column block of BN, y: row block of BM, z:
// batch*nslices + slice), with WX = BN / (4 TV) by WY = BM / TM invocations
// per workgroup; the prelude defines BM, BN, TM and TV, and the file before
// this one B4 and gemm_b4, BK and gemm_bk (gemm_rv_b4.wgsl: B's rows are
// contiguous runs of whole vec4s, read one vec4 per column group;
// gemm_rv_bk.wgsl: a typed B along k, four k of a column read at once;
// gemm_rv_b1.wgsl: B is read one element at a time, as the planner picks
// per launch), and the file before that A4 and gemm_a4 (gemm_rv_a4.wgsl:
// A's rows are aligned runs of vec4s along k, read four k at a time;
// gemm_rv_a1.wgsl: one float at a time). On CPU adapters
// workgroup memory is ordinary memory and every barrier is costly, so this
// form runs faster there; gemm_select.c picks the block per adapter and
// shape. An invocation's rows are consecutive; its column groups interleave
// with its neighbours' (group v at 4 * (lid.x + v * WX)), so the lanes of a
// SIMD batch, which are neighbouring invocations, read neighbouring
// elements. Every accumulator is its own variable, written out: nothing is
// indexed at run time (a private array spills to memory on CPU adapters),
// and the blocks not used vanish when the compiler folds their constant
// conditions. Rows and columns past the edge load clamped (valid) indices
// and are not stored. The block is stored through one call of gemm_out in a
// loop (the epilogue, inlined at every call, would otherwise compile 256
// times over).

const WX: u32 = BN / (4u * TV);
const WY: u32 = BM / TM;

// Element offsets in B of column group v, clamped into C.
fn gemm_bcols(col0: u32, v: u32, base: vec4<u32>) -> vec4<u32> {
  let c = col0 + v * 4u * WX;
  return min(vec4<u32>(c, c + 1u, c + 2u, c + 3u), vec4<u32>(P.n - 1u)) *
             P.cs_b + base;
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let col0 = wid.x * BN + lid.x * 4u;
  let row0 = wid.y * BM + lid.y * TM;
  if (row0 >= P.m || col0 >= P.n) {
    return; // no barrier follows: leaving early is fine
  }
  let t = wid.z / P.nslices;
  let s = wid.z % P.nslices;
  let kbeg = s * P.kslice;
  let kend = min(P.k, kbeg + P.kslice);
  let abase = t * P.ba + kbeg * P.cs_a;
  let bbase = vec4<u32>(t * P.bb + kbeg * P.rs_b);"""


OUTPUT = """\
  for (var e = 0u; e < TM * TV * 4u; e++) {
    let i = row0 + e / (TV * 4u);
    let j = col0 + (e / 4u % TV) * 4u * WX + e % 4u;
    if (i < P.m && j < P.n) {
      gemm_out(t, s, i, j, o[e / 4u][e % 4u]);
    }
  }"""


def guard(conds, body, ind):
    """body (lines) under `if (conds)` at indent ind, or as is without."""
    if not conds:
        return [ind + b for b in body]
    out = [ind + "if (" + " && ".join(conds) + ") {"]
    out += [ind + "  " + b for b in body]
    out.append(ind + "}")
    return out


def rows(r):
    return ["TM > %du" % r] if r else []


def groups(v):
    return ["TV > %du" % v] if v else []


def b_load(name, v, ind, declare=True):
    """Column group v of B's row kk into name; steps to the next row."""
    out = [ind + "var %s = vec4<f32>(0.0f);" % name] if declare else []
    out += guard(groups(v), [
        "if (B4) {",
        "  %s = gemm_b4(qb%d);" % (name, v),
        "  qb%d += P.rs_b >> 2u;" % v,
        "} else {",
        "  %s = vec4<f32>(b_ld(pb%d.x), b_ld(pb%d.y), b_ld(pb%d.z), b_ld(pb%d.w));"
        % ((name,) + (v,) * 4),
        "  pb%d += vec4<u32>(P.rs_b);" % v,
        "}"], ind)
    return out


def main():
    out = HEADER.split("\n")
    for r in range(MAX_ROWS):
        out.append("  var pa%d = min(row0 + %du, P.m - 1u) * P.rs_a + abase;" % (r, r))
    for v in range(MAX_GROUPS):
        out.append("  var pb%d = gemm_bcols(col0, %du, bbase);" % (v, v))
        out.append("  var qb%d = pb%d.x >> 2u;" % (v, v))
    for r in range(MAX_ROWS):
        for v in range(MAX_GROUPS):
            out.append("  var acc%d_%d = vec4<f32>(0.0f);" % (r, v))
    # A4: four k a turn while four remain, A's run along k read as one vec4
    # per row; the k left over (and every k otherwise) one at a time.
    out.append("  var kk = kbeg;")
    out.append("  if (A4) {")
    for r in range(MAX_ROWS):
        out.append("    var qa%d = pa%d >> 2u;" % (r, r))
    out.append("    for (; kk + 4u <= kend; kk += 4u) {")
    for q in range(4):
        for v in range(MAX_GROUPS):
            out.append("      var b%d_%d = vec4<f32>(0.0f);" % (v, q))
    # BK: each column's four k read together (a typed B along k, its words
    # decoded once), then regrouped by k
    out.append("      if (BK) {")
    for v in range(MAX_GROUPS):
        body = ["let c%d_%d = gemm_bk(pb%d.%s);" % (v, i, v, "xyzw"[i])
                for i in range(4)]
        body += ["b%d_%d = vec4<f32>(c%d_0[%d], c%d_1[%d], c%d_2[%d], c%d_3[%d]);"
                 % (v, q, v, q, v, q, v, q, v, q) for q in range(4)]
        body.append("pb%d += vec4<u32>(4u * P.rs_b);" % v)
        out += guard(groups(v), body, "        ")
    out.append("      } else {")
    for q in range(4):
        for v in range(MAX_GROUPS):
            out += b_load("b%d_%d" % (v, q), v, "        ", False)
    out.append("      }")
    for r in range(MAX_ROWS):
        body = ["let a%d = gemm_a4(qa%d);" % (r, r)]
        for q in range(4):
            for v in range(MAX_GROUPS):
                body += guard(groups(v), ["acc%d_%d = fma(vec4<f32>(a%d[%d]), b%d_%d, acc%d_%d);"
                                          % (r, v, r, q, v, q, r, v)], "")
        body.append("qa%d += 1u;" % r)
        out += guard(rows(r), body, "      ")
    out.append("    }")
    for r in range(MAX_ROWS):
        out += guard(rows(r), ["pa%d = qa%d * 4u;" % (r, r)], "    ")
    out.append("  }")
    out.append("  for (; kk < kend; kk++) {")
    for v in range(MAX_GROUPS):
        out += b_load("b%d" % v, v, "    ")
    for r in range(MAX_ROWS):
        body = ["let a%d = vec4<f32>(a_ld(pa%d));" % (r, r)]
        for v in range(MAX_GROUPS):
            body += guard(groups(v), ["acc%d_%d = fma(a%d, b%d, acc%d_%d);"
                                      % (r, v, r, v, r, v)], "")
        body.append("pa%d += P.cs_a;" % r)
        out += guard(rows(r), body, "    ")
    out.append("  }")
    # One call of the output stage (the epilogue inlines into each), in a
    # loop over the block copied to an array, indexed only here, once. The
    # constant indices of blocks not used are clamped, as WGSL rejects a
    # constant index out of range even where it is never reached.
    out.append("  var o: array<vec4<f32>, TM * TV>;")
    for r in range(MAX_ROWS):
        for v in range(MAX_GROUPS):
            out += guard(rows(r) + groups(v),
                         ["o[min(%du * TV + %du, TM * TV - 1u)] = acc%d_%d;" % (r, v, r, v)], "  ")
    out += OUTPUT.split("\n")
    out.append("}")
    with open("kernels/gemm_rv.wgsl", "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
