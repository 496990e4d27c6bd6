// Fused scaled-dot-product attention, flash-attention style:
//   O = softmax(softcap(scale * Q K^T) + mask) V
// with an online softmax (running max and sum, rescaled per key tile), so
// no score matrix is ever stored. Q and K rows have head_dim elements, V
// and O rows head_dim_v, addressed through the Params strides relative to
// this launch's bindings (the host splits large tensors over batch*heads,
// attention_common.wgsl). Keys are
// streamed in tiles of BK = 16 through workgroup memory. Keys a row cannot
// see (causal masks; every mask keeps a prefix of the keys) get no
// probability at all, so a row that sees no key keeps l == 0 and is written
// as zeros, and masked K/V values are never combined into a result.
//
// Two shapes, chosen by the host through MODE:
//
// MODE 1, "rows" (head_dim and head_dim_v <= 64): WG = 8..64 invocations,
// one query row each, with the row of Q (RD4 vec4s) and its output
// accumulator (RV4 vec4s) in registers. Every invocation reads the same
// K/V element at a time from workgroup memory (broadcast reads). Scores
// are scale * (q . k), never a pre-scaled Q (attention_common.wgsl: why).
//
// MODE 0, "tiles" (head_dim > 64; works for any): WG = 256 invocations for
// BQ = 16 query rows and DV = VC * NVC output dimensions (a "dim group";
// several when head_dim_v > DV). Invocation li is row r = li / 16 and lane
// c = li % 16. Per tile:
//   1. scores: invocation (r, c) computes the dot product of query r with key
//      c over head_dim, in chunks of DC dims staged in workgroup memory as
//      vec4 (the Q chunk stays resident when head_dim <= DC), then softcap
//      and the additive mask; a key the causal mask hides gets MASKED;
//   2. softmax: each invocation computes its row's tile max (the 16
//      invocations of a row do so identically), the new running max, the
//      rescale factor alpha and its own probability p = exp(s - max), 0 for
//      a masked key;
//   3. output: invocation (r, c) owns the vec4s c + 16*u (u < NV4) of each V
//      chunk of VC = 64*NV4 dims: acc = acc*alpha + sum_j p_j V[j].
//
// Consts from the host: MODE, WG (the workgroup size), DC (4..64, a power of
// two), NV4 (1 or 2), NVC (1 or 2), RD4 and RV4 (1..16: vec4s of a Q/K and
// of a V/O row, rows shape), PARTIAL (0 or 1), SOFTCAP (0 or 1).
//
// Splits (host: src/webgpu/attention.c): a launch may cover only query rows
// [q_first, q_first + seq_q) and keys [k_first, k_first + seq_kv) of one
// head (seq_q and seq_kv are then this launch's counts; gq and gkv the
// call's, for the masks). With the const PARTIAL == 1 (a separate pipeline,
// so the common one carries none of it) a row is written as its
// softmax state for a later combine (kernels/attention_combine.wgsl):
// the unnormalised output sum_j exp(s_j - m) V_j, then m and
// l = sum_j exp(s_j - m), and the extras of attn_fix, at a row stride of
// o_stride = 5 * head_dim_v + 2.
//
// A row whose sums end non-finite (an infinity or NaN of V, or an
// overflow) is walked again against its final max by the invocations that
// hold those sums (attn_fix, attention_fix*.wgsl: global memory, no
// barrier), so that such a value reaches the row only from a key whose
// final weight is not 0.
//
// Params, the masks and the row loads/stores: kernels/attention_common.wgsl.

const BQ: u32 = 16u;        // query rows per workgroup (tiles)
const BK: u32 = 16u;        // keys per tile (both modes)
const DC4: u32 = DC / 4u;   // vec4s of a score chunk row
const KS4: u32 = DC4 + 1u;  // K chunk row stride in vec4s (padded: no bank conflicts)
const VC4: u32 = 16u * NV4; // vec4s of a V chunk row
const VC: u32 = 4u * VC4;

var<workgroup> attn_q: array<vec4<f32>, 256>;   // Q chunk, BQ x DC4
// tiles: K chunk BK x KS4, or V chunk BK x VC4; rows: K tile, then V tile
// at 256, BK x RD4 each
var<workgroup> attn_kv: array<vec4<f32>, 512>;
var<workgroup> attn_s: array<f32, 256>;  // scaled scores, BQ x BK
var<workgroup> attn_p: array<f32, 256>;  // probabilities, BQ x BK

// MODE 0; g is the (uniform) linear workgroup index.
fn attn_tiles(g: u32, li: u32) {
  // Workgroup coordinates (uniform): dim group, query block, head.
  let live = g < P.bh_count * P.qblocks * P.dgroups;
  let gg = select(0u, g, live);
  let dg = gg % P.dgroups;
  let qb = (gg / P.dgroups) % P.qblocks;
  let bhl = gg / (P.dgroups * P.qblocks);
  let bh = P.bh_base + bhl;
  let kvh = attn_kv_head(bh);
  let hd = P.head_dim;
  let hdv = P.head_dim_v;
  let q0 = qb * BQ;
  let d0 = dg * VC * NVC;
  let q_resident = hd <= DC;
  // row 0 of the head in each binding (rows step by the seq strides)
  let q_head = attn_q_row(bh, 0u);
  let k_head = attn_k_row(kvh, 0u);
  let v_head = attn_v_row(kvh, 0u);
  // Keys any row of the block sees: the last row sees the most.
  let last = min(q0 + BQ, P.seq_q) - 1u;
  let kv_end = select(0u, attn_visible(last), live);

  // This invocation's row and lane.
  let r = li / BK;
  let c = li % BK;
  let i = q0 + r;
  let vis = select(0u, attn_visible(i), i < P.seq_q);
  let m_row = attn_m_row(bh, i);

  var m = 0.0f;  // running max of finite scores (meaningful once l > 0)
  var l = 0.0f;  // running sum of exp(s - m)
  var bad = false;  // a NaN or +inf score (attn_bad)
  var acc: array<vec4<f32>, 4>;  // [chunk * NV4 + u]

  for (var k0 = 0u; k0 < kv_end; k0 += BK) {
    // keys k0 .. k0+nv-1 are visible to row r
    let nv = min(vis - min(vis, k0), BK);

    // 1. scores of this tile
    var s = 0.0f;
    for (var dc = 0u; dc < hd; dc += DC) {
      if (!q_resident || k0 == 0u) {
        for (var e = li; e < BQ * DC4; e += WG) {
          let row = e / DC4;
          let d = dc + 4u * (e % DC4);
          var x = vec4<f32>(0.0f);
          if (q0 + row < P.seq_q) {
            x = attn_ld_q(q_head + (q0 + row) * P.qs.z + d, d, hd);
          }
          attn_q[e] = x;
        }
      }
      for (var e = li; e < BK * DC4; e += WG) {
        let row = e / DC4;
        let d = dc + 4u * (e % DC4);
        var x = vec4<f32>(0.0f);
        if (k0 + row < kv_end) {
          x = attn_ld_k(k_head + (k0 + row) * P.ks.z + d, d, hd);
        }
        attn_kv[row * KS4 + e % DC4] = x;
      }
      workgroupBarrier();
      for (var d4 = 0u; d4 < DC4; d4++) {
        s += dot(attn_q[r * DC4 + d4], attn_kv[c * KS4 + d4]);
      }
      if (dc + DC >= hd) {
        var x = MASKED;
        if (c < nv) {
          x = attn_masked(attn_cap(s * P.scale), m_row + k0 + c);
        }
        attn_s[li] = x;
      }
      workgroupBarrier();
    }

    // 2. online softmax
    var m_new = m;
    if (nv > 0u) {
      var mt = MASKED;
      for (var j = 0u; j < nv; j++) {
        let x = attn_s[r * BK + j];
        bad = bad || attn_bad(x);
        mt = max(mt, select(MASKED, x, attn_finite(x)));
      }
      m_new = select(mt, max(m, mt), l > 0.0f);
    }
    let alpha = select(1.0f, attn_exp(m - m_new), l > 0.0f);
    let sv = attn_s[li];
    attn_p[li] = select(0.0f, attn_exp(sv - m_new), c < nv && attn_finite(sv));
    m = m_new;
    l *= alpha;
    for (var a = 0u; a < NV4 * NVC; a++) {
      acc[a] = attn_rescale(acc[a], alpha);
    }

    // 3. output, V chunk by chunk (the K chunk is no longer read)
    for (var vc = 0u; vc < NVC; vc++) {
      if (vc > 0u) {
        workgroupBarrier();
      }
      for (var e = li; e < BK * VC4; e += WG) {
        let row = e / VC4;
        let d = d0 + vc * VC + 4u * (e % VC4);
        var x = vec4<f32>(0.0f);
        if (k0 + row < kv_end) {
          x = attn_ld_v(v_head + (k0 + row) * P.vs.z + d, d, hdv);
        }
        attn_kv[e] = x;
      }
      workgroupBarrier();
      // only visible keys: a non-finite V under the mask cannot leak in
      for (var j = 0u; j < nv; j++) {
        let pj = attn_p[r * BK + j];
        if (vc == 0u) {
          l += pj;
        }
        for (var u = 0u; u < NV4; u++) {
          acc[vc * NV4 + u] += attn_pv(pj, attn_kv[j * VC4 + c + 16u * u]);
        }
      }
    }
    workgroupBarrier();
  }

  if (live && i < P.seq_q) {
    let o_row = attn_o_row(bh, i);
    var fix = false;  // a non-finite sum (attn_fix: attention_fix1.wgsl, attention_fix16.wgsl)
    for (var vc = 0u; vc < NVC; vc++) {
      for (var u = 0u; u < NV4; u++) {
        var x = attn_out(acc[vc * NV4 + u], l, bad, vis);
        if (PARTIAL == 1u) {
          x = acc[vc * NV4 + u];
        }
        fix = fix || attn_needs_fix(acc[vc * NV4 + u]);
        let d = d0 + vc * VC + 4u * (c + 16u * u);
        attn_st_o(o_row + d, d, hdv, x);
      }
    }
    if (PARTIAL == 1u && c == 0u && dg == 0u) {
      o_st(o_row + hdv, attn_state_m(m, l, vis));
      o_st(o_row + hdv + 1u, attn_state_l(l, bad));
    }
    // this invocation's dims alone: vec4s d0 / 4 + c + 16 * (vc * NV4 + u)
    if (fix && !bad && l > 0.0f) {
      attn_fix(bh, i, m, vis, d0 / 4u + c, 16u, NVC * NV4);
    }
  }
}

// MODE 1; g is the (uniform) linear workgroup index.
fn attn_rows(g: u32, li: u32) {
  // Workgroup coordinates (uniform): query block, head.
  let live = g < P.bh_count * P.qblocks;
  let gg = select(0u, g, live);
  let qb = gg % P.qblocks;
  let bhl = gg / P.qblocks;
  let bh = P.bh_base + bhl;
  let kvh = attn_kv_head(bh);
  let hd = P.head_dim;
  let hdv = P.head_dim_v;
  let q0 = qb * WG;
  let last = min(q0 + WG, P.seq_q) - 1u;
  // key 0 of the K/V head in each binding (keys step by the seq strides)
  let k_head = attn_k_row(kvh, 0u);
  let v_head = attn_v_row(kvh, 0u);
  let kv_end = select(0u, attn_visible(last), live);

  // This invocation's row.
  let i = q0 + li;
  let vis = select(0u, attn_visible(i), i < P.seq_q);
  var qr: array<vec4<f32>, 16>;   // Q row
  var acc: array<vec4<f32>, 16>;
  var m_row = 0u;
  if (i < P.seq_q) {
    let q_row = attn_q_row(bh, i);
    for (var d4 = 0u; d4 < RD4; d4++) {
      qr[d4] = attn_ld_q(q_row + 4u * d4, 4u * d4, hd);
    }
    m_row = attn_m_row(bh, i);
  }

  var m = 0.0f;  // running max of finite scores (meaningful once l > 0)
  var l = 0.0f;  // running sum of exp(s - m)
  var bad = false;  // a NaN or +inf score (attn_bad)
  for (var k0 = 0u; k0 < kv_end; k0 += BK) {
    for (var e = li; e < BK * RD4; e += WG) {
      let row = e / RD4;
      let d = 4u * (e % RD4);
      var x = vec4<f32>(0.0f);
      if (k0 + row < kv_end) {
        x = attn_ld_k(k_head + (k0 + row) * P.ks.z + d, d, hd);
      }
      attn_kv[e] = x;
    }
    for (var e = li; e < BK * RV4; e += WG) {
      let row = e / RV4;
      let d = 4u * (e % RV4);
      var y = vec4<f32>(0.0f);
      if (k0 + row < kv_end) {
        y = attn_ld_v(v_head + (k0 + row) * P.vs.z + d, d, hdv);
      }
      attn_kv[256u + e] = y;
    }
    workgroupBarrier();

    // keys k0 .. k0+nv-1 are visible to this row
    let nv = min(vis - min(vis, k0), BK);
    var s: array<f32, 16>;
    var mt = MASKED;
    for (var j = 0u; j < BK; j++) {
      var x = 0.0f;
      for (var d4 = 0u; d4 < RD4; d4++) {
        x += dot(qr[d4], attn_kv[j * RD4 + d4]);
      }
      if (j < nv) {
        x = attn_masked(attn_cap(x * P.scale), m_row + k0 + j);
      }
      s[j] = x;
      bad = bad || (j < nv && attn_bad(x));
      mt = max(mt, select(MASKED, x, j < nv && attn_finite(x)));
    }
    var m_new = m;
    if (nv > 0u) {
      m_new = select(mt, max(m, mt), l > 0.0f);
    }
    let alpha = select(1.0f, attn_exp(m - m_new), l > 0.0f);
    m = m_new;
    l *= alpha;
    for (var d4 = 0u; d4 < RV4; d4++) {
      acc[d4] = attn_rescale(acc[d4], alpha);
    }
    for (var j = 0u; j < nv; j++) {
      let p = select(0.0f, attn_exp(s[j] - m_new), attn_finite(s[j]));
      l += p;
      for (var d4 = 0u; d4 < RV4; d4++) {
        acc[d4] += attn_pv(p, attn_kv[256u + j * RV4 + d4]);
      }
    }
    workgroupBarrier();
  }

  if (live && i < P.seq_q) {
    let o_row = attn_o_row(bh, i);
    var fix = false;  // a non-finite sum (attn_fix: attention_fix1.wgsl, attention_fix16.wgsl)
    for (var d4 = 0u; d4 < RV4; d4++) {
      var x = attn_out(acc[d4], l, bad, vis);
      if (PARTIAL == 1u) {
        x = acc[d4];
      }
      fix = fix || attn_needs_fix(acc[d4]);
      attn_st_o(o_row + 4u * d4, 4u * d4, hdv, x);
    }
    if (PARTIAL == 1u) {
      o_st(o_row + hdv, attn_state_m(m, l, vis));
      o_st(o_row + hdv + 1u, attn_state_l(l, bad));
    }
    if (fix && !bad && l > 0.0f) {
      attn_fix(bh, i, m, vis, 0u, 1u, RV4);
    }
  }
}

// The fix-up's loads (attn_fix: attention_fix1.wgsl, attention_fix16.wgsl).
fn attn_fix_row(x: u32, r: u32, d: u32, hd: u32) -> vec4<f32> {
  return attn_fix_row_any(x, r, d, hd);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let g = wg_linear_group(wid, nwg);
  if (MODE == 1u) {
    attn_rows(g, li);
  } else {
    attn_tiles(g, li);
  }
}
