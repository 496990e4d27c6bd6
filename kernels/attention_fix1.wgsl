// The fix-up pass (attn_fix) one key at a time: the least code to compile
// (a load site each for Q, K and V where attention_fix16.wgsl has 33),
// for adapters without a loop budget; it runs only for rows whose sums
// end non-finite. The same arguments, weights and sums into the output as
// attention_fix16.wgsl (its sum of the weights adds them in another
// order); loads and stores: attention_common.wgsl.
fn attn_fix(bh: u32, i: u32, m: f32, vis: u32, e0: u32, es: u32, en: u32) {
  let kvh = attn_kv_head(bh);
  let hd = P.head_dim;
  let hd4 = (hd + 3u) / 4u;
  let q_row = attn_q_row(bh, i);
  let m_row = attn_m_row(bh, i);
  let o_row = attn_o_row(bh, i);
  let k_head = attn_k_row(kvh, 0u);
  let v_head = attn_v_row(kvh, 0u);
  attn_fix_begin(o_row, e0, es, en);
  var l = 0.0f;
  for (var j = attn_kb * P.kb_keys; j < vis; j++) {
    let b = k_head + j * P.ks.z;
    var x = 0.0f;
    for (var d4 = 0u; d4 < hd4; d4++) {
      let d = 4u * d4;
      x += dot(attn_fix_row(ATTN_FIX_Q, q_row, d, hd),
               attn_fix_row(ATTN_FIX_K, b, d, hd));
    }
    let s = attn_masked(attn_cap(x * P.scale), m_row + j);
    let finite = (bitcast<u32>(s) & 0x7f800000u) != 0x7f800000u;
    let p = select(0.0f, attn_exp(s - m), finite);
    l += p;
    let c = v_head + j * P.vs.z;
    for (var t = 0u; t < en; t++) {
      let d = 4u * (e0 + es * t);
      if (d >= P.head_dim_v) {
        continue;  // the tiles form's vec4s past the head size
      }
      let none = vec4<f32>(-attn_inf());
      var top = AttnTop(none, none, none);
      let v = attn_fix_row(ATTN_FIX_V, c, d, P.head_dim_v);
      attn_fix_st(o_row, d, attn_fix_ld(o_row, d) + attn_fix_pv(&top, p, s, v));
      if (attn_partial()) {
        attn_fix_top_st(o_row, d, top);
      }
    }
  }
  attn_fix_end(o_row, l, e0, es, en);
}
