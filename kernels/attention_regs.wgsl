// Fused attention without workgroup memory, for CPU adapters (lavapipe,
// SwiftShader), where workgroup memory is ordinary memory and barriers are
// costly: one invocation per query row, with its row of Q (RD4 vec4s) and
// its output accumulator (RV4) in private arrays, reading K and V straight
// from memory in blocks of KB = 8 keys with an online softmax. No
// barriers, so each invocation stops at its own last visible key. Same
// Params, grid (one workgroup per WG query rows of a head), masks, GQA and
// PARTIAL split-KV output as kernels/attention.wgsl (MODE 1, "rows").
//
// Scores are scale * (q . k), as the formula has them (both kernels): a Q
// pre-scaled by scale can turn a normal element subnormal, which adapters
// may flush to 0 (SwiftShader does), and 0 times an infinite K element is
// NaN where the score is -inf.
//
// Masked keys of a block (past the row's visible prefix) read the row's
// last visible key (and its mask entry) instead, always in range, and get
// probability 0, so no masked or out-of-range K/V value is combined into a
// result.
//
// llvmpipe (lavapipe) ends every shader invocation after 65535 loop
// iterations in total, over all its loops (LP_MAX_TGSI_LOOP_ITERATIONS,
// one counter per invocation), silently: a long key range would stop early
// and give a wrong result. A block of keys costs 1 + 2 * RD4 iterations
// (the block loop and its loops over RD4 and RV4), so the host caps
// the keys of one launch (max_keys in src/webgpu/attention.c)
// and covers longer ranges with key blocks and the split-KV combine.
//
// A row whose sums end non-finite is walked again against its final max
// (attn_fix, attention_fix*.wgsl), so that an infinity or NaN of V
// reaches it only from a key whose final weight is not 0.
//
// Consts from the host: WG (8..64), RD4 and RV4 (vec4s of a Q/K and of a
// V/O row), PARTIAL (0, 1), SOFTCAP (0, 1).
// Params, the masks and the row loads/stores: kernels/attention_common.wgsl.

// The fix-up's loads (attn_fix: attention_fix1.wgsl, attention_fix16.wgsl).
fn attn_fix_row(x: u32, r: u32, d: u32, hd: u32) -> vec4<f32> {
  return attn_fix_row_any(x, r, d, hd);
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
  let kvh = attn_kv_head(bh);
  let hd = P.head_dim;
  let hdv = P.head_dim_v;
  let q_row = attn_q_row(bh, i);
  let m_row = attn_m_row(bh, i);
  // key 0 of the K/V head in each binding (keys step by the seq strides)
  let k_head = attn_k_row(kvh, 0u);
  let v_head = attn_v_row(kvh, 0u);
  let vis = attn_visible(i);

  var qr: array<vec4<f32>, RD4>;  // Q row
  var acc: array<vec4<f32>, RV4>;
  for (var d4 = 0u; d4 < RD4; d4++) {
    qr[d4] = attn_ld_q(q_row + 4u * d4, 4u * d4, hd);
  }
  for (var d4 = 0u; d4 < RV4; d4++) {
    acc[d4] = vec4<f32>(0.0f);
  }

  var m = 0.0f;  // running max of finite scores (meaningful once l > 0)
  var l = 0.0f;  // running sum of exp(s - m)
  var bad = false;  // a NaN or +inf score (attn_bad)
  for (var k0 = 0u; k0 < vis; k0 += 8u) {
    // keys k0 .. k0+nv-1 are visible; the others read the last visible one
    let nv = min(vis - k0, 8u);
    let kl = vis - 1u;
    let j0 = min(k0, kl);
    let j1 = min(k0 + 1u, kl);
    let j2 = min(k0 + 2u, kl);
    let j3 = min(k0 + 3u, kl);
    let j4 = min(k0 + 4u, kl);
    let j5 = min(k0 + 5u, kl);
    let j6 = min(k0 + 6u, kl);
    let j7 = min(k0 + 7u, kl);
    let b0 = k_head + j0 * P.ks.z;
    let b1 = k_head + j1 * P.ks.z;
    let b2 = k_head + j2 * P.ks.z;
    let b3 = k_head + j3 * P.ks.z;
    let b4 = k_head + j4 * P.ks.z;
    let b5 = k_head + j5 * P.ks.z;
    let b6 = k_head + j6 * P.ks.z;
    let b7 = k_head + j7 * P.ks.z;
    var sa = vec4<f32>(0.0f);  // scores of keys 0..3 of the block
    var sb = vec4<f32>(0.0f);  // and 4..7
    for (var d4 = 0u; d4 < RD4; d4++) {
      let d = 4u * d4;
      let q = qr[d4];
      sa.x += dot(q, attn_ld_k(b0 + d, d, hd));
      sa.y += dot(q, attn_ld_k(b1 + d, d, hd));
      sa.z += dot(q, attn_ld_k(b2 + d, d, hd));
      sa.w += dot(q, attn_ld_k(b3 + d, d, hd));
      sb.x += dot(q, attn_ld_k(b4 + d, d, hd));
      sb.y += dot(q, attn_ld_k(b5 + d, d, hd));
      sb.z += dot(q, attn_ld_k(b6 + d, d, hd));
      sb.w += dot(q, attn_ld_k(b7 + d, d, hd));
    }
    sa *= P.scale;
    sb *= P.scale;
    sa = vec4<f32>(attn_masked(attn_cap(sa.x), m_row + j0),
                   attn_masked(attn_cap(sa.y), m_row + j1),
                   attn_masked(attn_cap(sa.z), m_row + j2),
                   attn_masked(attn_cap(sa.w), m_row + j3));
    sb = vec4<f32>(attn_masked(attn_cap(sb.x), m_row + j4),
                   attn_masked(attn_cap(sb.y), m_row + j5),
                   attn_masked(attn_cap(sb.z), m_row + j6),
                   attn_masked(attn_cap(sb.w), m_row + j7));
    // visible keys, and those of them with a finite score
    let va = vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(nv);
    let vb = vec4<u32>(4u, 5u, 6u, 7u) < vec4<u32>(nv);
    let xa = bitcast<vec4<u32>>(sa);
    let xb = bitcast<vec4<u32>>(sb);
    let inf = vec4<u32>(0x7f800000u);
    let abs_mask = vec4<u32>(0x7fffffffu);
    bad = bad || any(va & (((xa & abs_mask) > inf) | (xa == inf))) ||
          any(vb & (((xb & abs_mask) > inf) | (xb == inf)));
    let fa = va & ((xa & inf) != inf);
    let fb = vb & ((xb & inf) != inf);
    sa = select(vec4<f32>(MASKED), sa, fa);
    sb = select(vec4<f32>(MASKED), sb, fb);
    let mv = max(sa, sb);
    let mt = max(max(mv.x, mv.y), max(mv.z, mv.w));
    let m_new = select(mt, max(m, mt), l > 0.0f);
    let alpha = select(1.0f, attn_exp(m - m_new), l > 0.0f);
    let pa = select(vec4<f32>(0.0f),
                    vec4<f32>(attn_exp(sa.x - m_new), attn_exp(sa.y - m_new),
                              attn_exp(sa.z - m_new), attn_exp(sa.w - m_new)),
                    fa);
    let pb = select(vec4<f32>(0.0f),
                    vec4<f32>(attn_exp(sb.x - m_new), attn_exp(sb.y - m_new),
                              attn_exp(sb.z - m_new), attn_exp(sb.w - m_new)),
                    fb);
    m = m_new;
    l = l * alpha + dot(pa + pb, vec4<f32>(1.0f));
    let c0 = v_head + j0 * P.vs.z;
    let c1 = v_head + j1 * P.vs.z;
    let c2 = v_head + j2 * P.vs.z;
    let c3 = v_head + j3 * P.vs.z;
    let c4 = v_head + j4 * P.vs.z;
    let c5 = v_head + j5 * P.vs.z;
    let c6 = v_head + j6 * P.vs.z;
    let c7 = v_head + j7 * P.vs.z;
    for (var d4 = 0u; d4 < RV4; d4++) {
      let d = 4u * d4;
      var x = attn_rescale(acc[d4], alpha);
      x += attn_pv(pa.x, attn_ld_v(c0 + d, d, hdv));
      x += attn_pv(pa.y, attn_ld_v(c1 + d, d, hdv));
      x += attn_pv(pa.z, attn_ld_v(c2 + d, d, hdv));
      x += attn_pv(pa.w, attn_ld_v(c3 + d, d, hdv));
      x += attn_pv(pb.x, attn_ld_v(c4 + d, d, hdv));
      x += attn_pv(pb.y, attn_ld_v(c5 + d, d, hdv));
      x += attn_pv(pb.z, attn_ld_v(c6 + d, d, hdv));
      x += attn_pv(pb.w, attn_ld_v(c7 + d, d, hdv));
      acc[d4] = x;
    }
  }

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
