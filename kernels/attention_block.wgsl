// Fused attention for CPU adapters (lavapipe, SwiftShader), where
// workgroup memory is ordinary memory and barriers are costly, at any
// number of query rows and head sizes up to 512: no barriers, K and V read
// straight from memory in blocks of 8 keys, an online softmax, R query rows
// per invocation. Every K and V element an invocation loads serves R rows:
// CPU adapters load a storage element lane by lane, so loads, not
// multiply-adds, bound this kernel, and R rows per load cut them R-fold.
// The loops over dims run to counts from Params, not consts: unrolled,
// they made shaders that took llvmpipe many seconds to compile.
//
// No private arrays indexed by those loops: llvmpipe turns each access to
// one into a chain of selects over the whole array, and with R rows of Q
// and of output accumulators held so, a head_dim 128 pipeline took 7-10 s
// to compile on lavapipe (head_dim 64: 3.5 s). Q is read from its binding
// where the score loop needs it (the K loads dominate; measured no slower)
// and each invocation's accumulators live in its own slots of workgroup
// memory (shared by nobody, so no barriers): about 1 s to compile at either
// size, run times the same or faster.
//
// Q, K and V rows that are whole vec4s from the start of their operand
// (Q4, K4, V4: the head size and every stride multiples of 4) load as one
// vec4 each through the q/k/v _ld4 accessors (one access each where the
// binding is 16-byte aligned, a gather of four floats elsewhere); other
// strides load float by float.
//
// Invocation li of workgroup (query block qb, head bh) owns rows
// qb * WG * R + li * R + r, r < R (adjacent rows: under a causal mask they
// see nearly the same keys). It runs the keys its last row sees; a key a
// row does not see gets probability 0 there, keys past the last visible
// one read that key instead (always in range), so no masked or
// out-of-range K/V value reaches a result. Same Params, masks, GQA,
// non-finite scores, split-KV states and fix-up pass for sums that end
// non-finite (attn_fix) as the other forms.
//
// Key blocks (P.kb_keys > 0, decoding: few rows, so few invocations would
// have work): invocations are numbered across the launch, consecutive ones
// taking consecutive blocks of kb_keys keys of the same R rows (P.qblocks
// such row groups per head), each writing its blocks' states for
// kernels/attention_combine.wgsl. A CPU adapter runs a workgroup's
// invocations as SIMD lanes: with one row a head, the other lanes of its
// workgroup would idle.
//
// llvmpipe ends an invocation after 65535 loop iterations over all its
// loops: a block of 8 keys costs at most HD4 + HV4 + 8 * R + 8 iterations
// where the compiler keeps the loops, and the fix-up pass (attn_fix) of
// each of its R rows at most hd4 + hv4 + 1 per 16 keys (max_keys in
// src/webgpu/attention.c caps the keys of one launch by both).
//
// Consts from the host: WG, R (1, 2 or 4), HD and HDV (head_dim and
// head_dim_v), PARTIAL (2: per launch, attn_partial), SOFTCAP (0, 1), Q4,
// K4, V4 (0, 1). WG * R * HV4 vec4s of workgroup memory stay within the
// WebGPU default of 16 KiB.
// Params, the masks and the row loads/stores: kernels/attention_common.wgsl.

const HV4: u32 = (HDV + 3u) / 4u;

// Elements at..at+3 of a row of Q, K or V whose dims d..d+3 may pass its
// head size (those read as 0): one vec4 where rows are whole vec4s (Q4,
// K4, V4), four floats where the head size is a multiple of 4, else float
// by float. One function per operand, each branch on consts only: every
// load site compiles to its one form (an operand argument tested at run
// time made SwiftShader compile all nine at each of the 20 sites).
fn ab_ld_q(at: u32, d: u32) -> vec4<f32> {
  if (Q4 == 1u) { return q_ld4(at >> 2u); }
  if (HD % 4u == 0u) {
    return vec4<f32>(q_ld(at), q_ld(at + 1u), q_ld(at + 2u), q_ld(at + 3u));
  }
  return attn_ld_q(at, d, HD);
}
fn ab_ld_k(at: u32, d: u32) -> vec4<f32> {
  if (K4 == 1u) { return k_ld4(at >> 2u); }
  if (HD % 4u == 0u) {
    return vec4<f32>(k_ld(at), k_ld(at + 1u), k_ld(at + 2u), k_ld(at + 3u));
  }
  return attn_ld_k(at, d, HD);
}
fn ab_ld_v(at: u32, d: u32) -> vec4<f32> {
  if (V4 == 1u) { return v_ld4(at >> 2u); }
  if (HDV % 4u == 0u) {
    return vec4<f32>(v_ld(at), v_ld(at + 1u), v_ld(at + 2u), v_ld(at + 3u));
  }
  return attn_ld_v(at, d, HDV);
}

// The fix-up's loads (attn_fix: attention_fix1.wgsl, attention_fix16.wgsl),
// as the loop's: rows start at whole vec4s where Q4, K4 or V4 say so.
fn attn_fix_row(x: u32, r: u32, d: u32, hd: u32) -> vec4<f32> {
  if (x == ATTN_FIX_Q) { return ab_ld_q(r + d, d); }
  if (x == ATTN_FIX_K) { return ab_ld_k(r + d, d); }
  return ab_ld_v(r + d, d);
}

// Scores of 4 keys as a vec4: NaN and +inf mark the row bad, only finite
// ones of visible keys (v) count, the others become MASKED.
fn ab_bad(s: vec4<f32>, v: vec4<bool>) -> bool {
  let x = bitcast<vec4<u32>>(s);
  let inf = vec4<u32>(0x7f800000u);
  return any(v & (((x & vec4<u32>(0x7fffffffu)) > inf) | (x == inf)));
}
fn ab_finite(s: vec4<f32>, v: vec4<bool>) -> vec4<bool> {
  let inf = vec4<u32>(0x7f800000u);
  return v & ((bitcast<vec4<u32>>(s) & inf) != inf);
}
fn ab_exp(s: vec4<f32>, m: f32, f: vec4<bool>) -> vec4<f32> {
  return select(vec4<f32>(0.0f),
                vec4<f32>(attn_exp(s.x - m), attn_exp(s.y - m),
                          attn_exp(s.z - m), attn_exp(s.w - m)),
                f);
}
fn ab_score(s: vec4<f32>, m_row: u32, j: vec4<u32>) -> vec4<f32> {
  let t = s * P.scale;
  return vec4<f32>(attn_masked(attn_cap(t.x), m_row + j.x),
                   attn_masked(attn_cap(t.y), m_row + j.y),
                   attn_masked(attn_cap(t.z), m_row + j.z),
                   attn_masked(attn_cap(t.w), m_row + j.w));
}

// Scores of q against 4 keys.
fn ab_dot4(q: vec4<f32>, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>,
           x3: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dot(q, x0), dot(q, x1), dot(q, x2), dot(q, x3));
}

// acc * alpha plus the weights a (keys 0..3) and b (4..7) times V rows.
fn ab_pv(acc: vec4<f32>, alpha: f32, a: vec4<f32>, b: vec4<f32>,
         y0: vec4<f32>, y1: vec4<f32>, y2: vec4<f32>, y3: vec4<f32>,
         y4: vec4<f32>, y5: vec4<f32>, y6: vec4<f32>, y7: vec4<f32>)
    -> vec4<f32> {
  var x = attn_rescale(acc, alpha);
  x += attn_pv(a.x, y0) + attn_pv(a.y, y1) + attn_pv(a.z, y2) +
       attn_pv(a.w, y3);
  x += attn_pv(b.x, y4) + attn_pv(b.y, y5) + attn_pv(b.z, y6) +
       attn_pv(b.w, y7);
  return x;
}

// The rows' output accumulators: vec4 d4 of row r of invocation li at
// ab_ai(d4, r, li), each slot used by its invocation alone.
var<workgroup> ab_acc: array<vec4<f32>, WG * R * HV4>;
fn ab_ai(d4: u32, r: u32, li: u32) -> u32 {
  return (d4 * R + r) * WG + li;
}

// Writes the output (or, partial, the softmax state) of launch row i,
// which saw vis keys; returns bit r where its sums ended non-finite and it
// needs attn_fix.
fn ab_finish(r: u32, li: u32, bh: u32, i: u32, m: f32, l: f32, bad: bool,
             vis: u32, hv4: u32) -> u32 {
  if (i >= P.seq_q) {
    return 0u;
  }
  let o_row = attn_o_row(bh, i);
  var fix = false;
  for (var d4 = 0u; d4 < hv4; d4++) {
    let y = ab_acc[ab_ai(d4, r, li)];
    var x = attn_out(y, l, bad, vis);
    if (attn_partial()) {
      x = y;
    }
    fix = fix || attn_needs_fix(y);
    attn_st_o(o_row + 4u * d4, 4u * d4, HDV, x);
  }
  if (attn_partial()) {
    o_st(o_row + HDV, attn_state_m(m, l, vis));
    o_st(o_row + HDV + 1u, attn_state_l(l, bad));
  }
  return select(0u, 1u << r, fix && !bad && l > 0.0f);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let g = wg_linear_group(wid, nwg);
  var bhl = 0u;
  var i0 = 0u;
  // the keys [k_beg, k_end) of the launch this invocation walks
  var k_beg = 0u;
  var k_end = P.seq_kv;
  if (P.kb_keys == 0u) {
    let qb = g % P.qblocks;
    bhl = g / P.qblocks;
    i0 = (qb * WG + li) * R;
  } else {
    let nkb = (P.seq_kv + P.kb_keys - 1u) / P.kb_keys;
    let t = g * WG + li;
    let u = t / nkb;
    attn_kb = t % nkb;
    bhl = u / P.qblocks;
    i0 = (u % P.qblocks) * R;
    k_beg = attn_kb * P.kb_keys;
    k_end = min(k_beg + P.kb_keys, P.seq_kv);
  }
  if (bhl >= P.bh_count || i0 >= P.seq_q) {
    return; // no barrier follows: leaving early is fine
  }
  let bh = P.bh_base + bhl;
  let kvh = attn_kv_head(bh);
  // key 0 of the K/V head in each binding (keys step by the seq strides)
  let k_head = attn_k_row(kvh, 0u);
  let v_head = attn_v_row(kvh, 0u);
  // vec4s of a row, from Params: loops that stay loops (see above)
  let hd4 = (P.head_dim + 3u) / 4u;
  let hv4 = (P.head_dim_v + 3u) / 4u;

  // the rows' softmax states; vis: the end of the keys a row sees here
  var vis: array<u32, 4>;
  var m_row: array<u32, 4>;
  var m: array<f32, 4>;  // running max of finite scores (once l > 0)
  var l: array<f32, 4>;  // running sum of exp(s - m)
  var bad: array<bool, 4>;  // a NaN or +inf score (attn_bad)
  var kv_end = 0u;
  for (var r = 0u; r < R; r++) {
    let i = min(i0 + r, P.seq_q - 1u);  // rows past seq_q see no key
    vis[r] = select(0u, min(attn_visible(i), k_end), i0 + r < P.seq_q);
    m_row[r] = attn_m_row(bh, i);
    m[r] = 0.0f;
    l[r] = 0.0f;
    bad[r] = false;
    kv_end = max(kv_end, vis[r]);
  }
  // the rows' Q (read in the score loop: see above)
  let last = P.seq_q - 1u;
  let qr0 = attn_q_row(bh, min(i0, last));
  let qr1 = attn_q_row(bh, min(i0 + 1u, last));
  let qr2 = attn_q_row(bh, min(i0 + 2u, last));
  let qr3 = attn_q_row(bh, min(i0 + 3u, last));
  for (var d4 = 0u; d4 < hv4 * R; d4++) {
    ab_acc[d4 * WG + li] = vec4<f32>(0.0f);
  }

  for (var k0 = k_beg; k0 < kv_end; k0 += 8u) {
    // keys past kv_end read the last visible one
    let kl = kv_end - 1u;
    let ja = min(vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(kl));
    let jb = min(vec4<u32>(k0) + vec4<u32>(4u, 5u, 6u, 7u), vec4<u32>(kl));
    let b0 = k_head + ja.x * P.ks.z;
    let b1 = k_head + ja.y * P.ks.z;
    let b2 = k_head + ja.z * P.ks.z;
    let b3 = k_head + ja.w * P.ks.z;
    let b4 = k_head + jb.x * P.ks.z;
    let b5 = k_head + jb.y * P.ks.z;
    let b6 = k_head + jb.z * P.ks.z;
    let b7 = k_head + jb.w * P.ks.z;
    var sa: array<vec4<f32>, 4>;  // scores of keys 0..3 of the block
    var sb: array<vec4<f32>, 4>;  // and 4..7
    for (var r = 0u; r < R; r++) {
      sa[r] = vec4<f32>(0.0f);
      sb[r] = vec4<f32>(0.0f);
    }
    for (var d4 = 0u; d4 < hd4; d4++) {
      let d = 4u * d4;
      let x0 = ab_ld_k(b0 + d, d);
      let x1 = ab_ld_k(b1 + d, d);
      let x2 = ab_ld_k(b2 + d, d);
      let x3 = ab_ld_k(b3 + d, d);
      let x4 = ab_ld_k(b4 + d, d);
      let x5 = ab_ld_k(b5 + d, d);
      let x6 = ab_ld_k(b6 + d, d);
      let x7 = ab_ld_k(b7 + d, d);
      let t0 = ab_ld_q(qr0 + d, d);
      sa[0] += ab_dot4(t0, x0, x1, x2, x3);
      sb[0] += ab_dot4(t0, x4, x5, x6, x7);
      if (R > 1u) {
        let t1 = ab_ld_q(qr1 + d, d);
        sa[1] += ab_dot4(t1, x0, x1, x2, x3);
        sb[1] += ab_dot4(t1, x4, x5, x6, x7);
      }
      if (R > 2u) {
        let t2 = ab_ld_q(qr2 + d, d);
        sa[2] += ab_dot4(t2, x0, x1, x2, x3);
        sb[2] += ab_dot4(t2, x4, x5, x6, x7);
        let t3 = ab_ld_q(qr3 + d, d);
        sa[3] += ab_dot4(t3, x0, x1, x2, x3);
        sb[3] += ab_dot4(t3, x4, x5, x6, x7);
      }
    }
    var pa: array<vec4<f32>, 4>;
    var pb: array<vec4<f32>, 4>;
    var alpha: array<f32, 4>;
    for (var r = 0u; r < R; r++) {
      // keys row r sees, and those of them with a finite score
      let va = vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(vis[r]);
      let vb = vec4<u32>(k0) + vec4<u32>(4u, 5u, 6u, 7u) < vec4<u32>(vis[r]);
      var xa = ab_score(sa[r], m_row[r], ja);
      var xb = ab_score(sb[r], m_row[r], jb);
      bad[r] = bad[r] || ab_bad(xa, va) || ab_bad(xb, vb);
      let fa = ab_finite(xa, va);
      let fb = ab_finite(xb, vb);
      xa = select(vec4<f32>(MASKED), xa, fa);
      xb = select(vec4<f32>(MASKED), xb, fb);
      let mv = max(xa, xb);
      let mt = max(max(mv.x, mv.y), max(mv.z, mv.w));
      let m_new = select(mt, max(m[r], mt), l[r] > 0.0f);
      alpha[r] = select(1.0f, attn_exp(m[r] - m_new), l[r] > 0.0f);
      pa[r] = ab_exp(xa, m_new, fa);
      pb[r] = ab_exp(xb, m_new, fb);
      m[r] = m_new;
      l[r] = l[r] * alpha[r] + dot(pa[r] + pb[r], vec4<f32>(1.0f));
    }
    let c0 = v_head + ja.x * P.vs.z;
    let c1 = v_head + ja.y * P.vs.z;
    let c2 = v_head + ja.z * P.vs.z;
    let c3 = v_head + ja.w * P.vs.z;
    let c4 = v_head + jb.x * P.vs.z;
    let c5 = v_head + jb.y * P.vs.z;
    let c6 = v_head + jb.z * P.vs.z;
    let c7 = v_head + jb.w * P.vs.z;
    for (var d4 = 0u; d4 < hv4; d4++) {
      let d = 4u * d4;
      let y0 = ab_ld_v(c0 + d, d);
      let y1 = ab_ld_v(c1 + d, d);
      let y2 = ab_ld_v(c2 + d, d);
      let y3 = ab_ld_v(c3 + d, d);
      let y4 = ab_ld_v(c4 + d, d);
      let y5 = ab_ld_v(c5 + d, d);
      let y6 = ab_ld_v(c6 + d, d);
      let y7 = ab_ld_v(c7 + d, d);
      let s0 = ab_ai(d4, 0u, li);
      ab_acc[s0] = ab_pv(ab_acc[s0], alpha[0], pa[0], pb[0], y0, y1, y2,
                         y3, y4, y5, y6, y7);
      if (R > 1u) {
        let s1 = ab_ai(d4, 1u, li);
        ab_acc[s1] = ab_pv(ab_acc[s1], alpha[1], pa[1], pb[1], y0, y1, y2,
                           y3, y4, y5, y6, y7);
      }
      if (R > 2u) {
        let s2 = ab_ai(d4, 2u, li);
        ab_acc[s2] = ab_pv(ab_acc[s2], alpha[2], pa[2], pb[2], y0, y1, y2,
                           y3, y4, y5, y6, y7);
        let s3 = ab_ai(d4, 3u, li);
        ab_acc[s3] = ab_pv(ab_acc[s3], alpha[3], pa[3], pb[3], y0, y1, y2,
                           y3, y4, y5, y6, y7);
      }
    }
  }

  // keys seen: vis[r] - k_beg where a row sees past k_beg
  let kb4 = vec4<u32>(k_beg);
  let seen = vec4<u32>(vis[0], vis[1], vis[2], vis[3]);
  let n = seen - min(seen, kb4);
  var fix = ab_finish(0u, li, bh, i0, m[0], l[0], bad[0], n.x, hv4);
  if (R > 1u) {
    fix |= ab_finish(1u, li, bh, i0 + 1u, m[1], l[1], bad[1], n.y, hv4);
  }
  if (R > 2u) {
    fix |= ab_finish(2u, li, bh, i0 + 2u, m[2], l[2], bad[2], n.z, hv4);
    fix |= ab_finish(3u, li, bh, i0 + 3u, m[3], l[3], bad[3], n.w, hv4);
  }
  // Rows whose sums ended non-finite, walked again one by one: a loop the
  // compiler cannot unroll keeps attn_fix inlined once, not R times. The
  // rows' m and vis are picked by constant indices: indexing them by r
  // would keep those arrays in memory for the loop over keys too
  // (measured 5% slower split-KV decoding on lavapipe).
  while (fix != 0u) {
    let r = countTrailingZeros(fix);
    fix &= fix - 1u;
    let mr = select(select(m[0], m[1], r == 1u),
                    select(m[2], m[3], r == 3u), r >= 2u);
    let vr = select(select(vis[0], vis[1], r == 1u),
                    select(vis[2], vis[3], r == 3u), r >= 2u);
    attn_fix(bh, i0 + r, mr, vr, 0u, 1u, hv4);
  }
}
