// Fused attention without workgroup memory, for CPU adapters (lavapipe,
// SwiftShader), where workgroup memory is ordinary memory and barriers are
// costly: one invocation per query row, with its row of Q (pre-scaled) and
// its output accumulator in private arrays of RD4 vec4s, reading K and V
// straight from memory in blocks of KB = 8 keys with an online softmax. No
// barriers, so each invocation stops at its own last visible key. Same
// Params, grid (one workgroup per WG query rows of a head), masks, GQA and
// PARTIAL split-KV output as kernels/attention.wgsl (MODE 1, "rows").
//
// Masked keys of a block (past the row's visible prefix) read the row's
// last visible key instead (always in range) and get probability 0, so no
// masked or out-of-range K/V value is combined into a result.
//
// llvmpipe (lavapipe) ends every shader invocation after 65535 loop
// iterations in total, over all its loops (LP_MAX_TGSI_LOOP_ITERATIONS,
// one counter per invocation), silently: a long key range would stop early
// and give a wrong result. A block of keys costs 1 + 2 * RD4 iterations
// (the block loop and its two loops over the head dims), so the host caps
// the keys of one launch (attn_regs_max_keys in src/webgpu_attention.c)
// and covers longer ranges with key blocks and the split-KV combine.
//
// Consts from the host: WG (8..64), RD4 (vec4s of a row), PARTIAL (0, 1).

struct Params {
  off: vec4<u32>,
  heads: u32,
  heads_kv: u32,
  group: u32,     // heads / heads_kv
  seq_q: u32,
  seq_kv: u32,
  head_dim: u32,
  qblocks: u32,   // ceil(seq_q / WG)
  dgroups: u32,   // 1
  bh_base: u32,   // batch*heads + head of this launch's first Q head
  kv_base: u32,   // batch*heads_kv + kv head of its first K/V head
  bh_count: u32,  // Q heads in this launch
  causal: u32,    // a wgc_causal
  scale: f32,
  q_first: u32,   // global index of this launch's query row 0
  k_first: u32,   // global index of this launch's key 0
  gq: u32,        // the call's seq_q and seq_kv (masks)
  gkv: u32,
  o_stride: u32,  // elements between rows of O (head_dim, or + 2: PARTIAL)
}

const MASKED: f32 = -3.0e38f;

// Keys j < ar_visible_global(i) are visible to query i, both global
// indices (every mask is a prefix).
fn ar_visible_global(i: u32) -> u32 {
  let n = P.gkv;
  if (P.causal == 1u) {            // TOP_LEFT: j <= i
    return min(i + 1u, n);
  }
  if (P.causal == 2u) {            // BOTTOM_RIGHT: j <= i + seq_kv - seq_q
    if (i + 1u + n <= P.gq) { return 0u; }
    return min(i + 1u + n - P.gq, n);
  }
  return n;
}

// Keys j < ar_visible(i) of this launch are visible to its query row i.
fn ar_visible(i: u32) -> u32 {
  let g = ar_visible_global(P.q_first + i);
  return min(g - min(g, P.k_first), P.seq_kv);
}

// exp of x <= 0; far below the float range it is exactly 0.
fn ar_exp(x: f32) -> f32 {
  return select(exp(max(x, -87.0f)), 0.0f, x < -87.0f);
}

// Elements at..at+3 of a row whose dims d..d+3 may pass the head_dim hd
// (those read as 0).
fn ar_ld_q(at: u32, d: u32, hd: u32) -> vec4<f32> {
  if (d + 3u < hd) {
    return vec4<f32>(q_ld(at), q_ld(at + 1u), q_ld(at + 2u), q_ld(at + 3u));
  }
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = q_ld(at); }
  if (d + 1u < hd) { x.y = q_ld(at + 1u); }
  if (d + 2u < hd) { x.z = q_ld(at + 2u); }
  return x;
}
fn ar_ld_k(at: u32, d: u32, hd: u32) -> vec4<f32> {
  if (d + 3u < hd) {
    return vec4<f32>(k_ld(at), k_ld(at + 1u), k_ld(at + 2u), k_ld(at + 3u));
  }
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = k_ld(at); }
  if (d + 1u < hd) { x.y = k_ld(at + 1u); }
  if (d + 2u < hd) { x.z = k_ld(at + 2u); }
  return x;
}
fn ar_ld_v(at: u32, d: u32, hd: u32) -> vec4<f32> {
  if (d + 3u < hd) {
    return vec4<f32>(v_ld(at), v_ld(at + 1u), v_ld(at + 2u), v_ld(at + 3u));
  }
  var x = vec4<f32>(0.0f);
  if (d < hd) { x.x = v_ld(at); }
  if (d + 1u < hd) { x.y = v_ld(at + 1u); }
  if (d + 2u < hd) { x.z = v_ld(at + 2u); }
  return x;
}

// Stores x at..at+3 of a row, skipping dims past the head_dim hd.
fn ar_st_o(at: u32, d: u32, hd: u32, x: vec4<f32>) {
  if (d < hd) { o_st(at, x.x); }
  if (d + 1u < hd) { o_st(at + 1u, x.y); }
  if (d + 2u < hd) { o_st(at + 2u, x.z); }
  if (d + 3u < hd) { o_st(at + 3u, x.w); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let g = wg_linear_group(wid, nwg);
  let qb = g % P.qblocks;
  let bhl = g / P.qblocks;
  let i = qb * WG + li;
  if (bhl >= P.bh_count || i >= P.seq_q) {
    return; // no barrier follows: leaving early is fine
  }
  let bh = P.bh_base + bhl;
  let kvh = (bh / P.heads) * P.heads_kv + (bh % P.heads) / P.group - P.kv_base;
  let hd = P.head_dim;
  let k_base = kvh * P.seq_kv * hd;  // element of K/V row 0
  let row_base = (bhl * P.seq_q + i) * hd;
  let vis = ar_visible(i);

  var qr: array<vec4<f32>, RD4>;  // scale * Q row
  var acc: array<vec4<f32>, RD4>;
  for (var d4 = 0u; d4 < RD4; d4++) {
    qr[d4] = ar_ld_q(row_base + 4u * d4, 4u * d4, hd) * P.scale;
    acc[d4] = vec4<f32>(0.0f);
  }

  var m = 0.0f;  // running max (meaningful once l > 0)
  var l = 0.0f;  // running sum of exp(s - m)
  for (var k0 = 0u; k0 < vis; k0 += 8u) {
    // keys k0 .. k0+nv-1 are visible; the others read the last visible one
    let nv = min(vis - k0, 8u);
    let kl = vis - 1u;
    let b0 = k_base + min(k0, kl) * hd;
    let b1 = k_base + min(k0 + 1u, kl) * hd;
    let b2 = k_base + min(k0 + 2u, kl) * hd;
    let b3 = k_base + min(k0 + 3u, kl) * hd;
    let b4 = k_base + min(k0 + 4u, kl) * hd;
    let b5 = k_base + min(k0 + 5u, kl) * hd;
    let b6 = k_base + min(k0 + 6u, kl) * hd;
    let b7 = k_base + min(k0 + 7u, kl) * hd;
    var sa = vec4<f32>(0.0f);  // scores of keys 0..3 of the block
    var sb = vec4<f32>(0.0f);  // and 4..7
    for (var d4 = 0u; d4 < RD4; d4++) {
      let d = 4u * d4;
      let q = qr[d4];
      sa.x += dot(q, ar_ld_k(b0 + d, d, hd));
      sa.y += dot(q, ar_ld_k(b1 + d, d, hd));
      sa.z += dot(q, ar_ld_k(b2 + d, d, hd));
      sa.w += dot(q, ar_ld_k(b3 + d, d, hd));
      sb.x += dot(q, ar_ld_k(b4 + d, d, hd));
      sb.y += dot(q, ar_ld_k(b5 + d, d, hd));
      sb.z += dot(q, ar_ld_k(b6 + d, d, hd));
      sb.w += dot(q, ar_ld_k(b7 + d, d, hd));
    }
    let va = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(nv);
    let vb = vec4<u32>(4u, 5u, 6u, 7u) < vec4<u32>(nv);
    sa = select(vec4<f32>(MASKED), sa, va);
    sb = select(vec4<f32>(MASKED), sb, vb);
    let mv = max(sa, sb);
    let mt = max(max(mv.x, mv.y), max(mv.z, mv.w));  // key 0 is visible
    let m_new = select(mt, max(m, mt), l > 0.0f);
    let alpha = select(1.0f, ar_exp(m - m_new), l > 0.0f);
    let pa = select(vec4<f32>(0.0f),
                    vec4<f32>(ar_exp(sa.x - m_new), ar_exp(sa.y - m_new),
                              ar_exp(sa.z - m_new), ar_exp(sa.w - m_new)),
                    va);
    let pb = select(vec4<f32>(0.0f),
                    vec4<f32>(ar_exp(sb.x - m_new), ar_exp(sb.y - m_new),
                              ar_exp(sb.z - m_new), ar_exp(sb.w - m_new)),
                    vb);
    m = m_new;
    l = l * alpha + dot(pa + pb, vec4<f32>(1.0f));
    for (var d4 = 0u; d4 < RD4; d4++) {
      let d = 4u * d4;
      var x = acc[d4] * alpha;
      x += pa.x * ar_ld_v(b0 + d, d, hd);
      x += pa.y * ar_ld_v(b1 + d, d, hd);
      x += pa.z * ar_ld_v(b2 + d, d, hd);
      x += pa.w * ar_ld_v(b3 + d, d, hd);
      x += pb.x * ar_ld_v(b4 + d, d, hd);
      x += pb.y * ar_ld_v(b5 + d, d, hd);
      x += pb.z * ar_ld_v(b6 + d, d, hd);
      x += pb.w * ar_ld_v(b7 + d, d, hd);
      acc[d4] = x;
    }
  }

  let o_row = (bhl * P.seq_q + i) * P.o_stride;
  for (var d4 = 0u; d4 < RD4; d4++) {
    var x = select(vec4<f32>(0.0f), acc[d4] / l, l > 0.0f);
    if (PARTIAL == 1u) {
      x = acc[d4];
    }
    ar_st_o(o_row + 4u * d4, 4u * d4, hd, x);
  }
  if (PARTIAL == 1u) {
    o_st(o_row + hd, m);
    o_st(o_row + hd + 1u, l);
  }
}
