// The fix-up pass (attn_fix) for llvmpipe: 16 keys a step, so that its
// loop iterations fit the adapter's budget (src/webgpu/attention.c:
// max_keys). attention_fix1.wgsl takes the same arguments with the least
// code, for every other adapter. Loads and stores: attention_common.wgsl.

// Four keys (V rows at c, weights p, scores s) added to dims d..d+3.
fn attn_fix_pv4(t: ptr<function, AttnTop>, d: u32, y: vec4<f32>,
                p: vec4<f32>, s: vec4<f32>, c: vec4<u32>) -> vec4<f32> {
  let hdv = P.head_dim_v;
  var x = y;
  x += attn_fix_pv(t, p.x, s.x, attn_fix_row(ATTN_FIX_V, c.x, d, hdv));
  x += attn_fix_pv(t, p.y, s.y, attn_fix_row(ATTN_FIX_V, c.y, d, hdv));
  x += attn_fix_pv(t, p.z, s.z, attn_fix_row(ATTN_FIX_V, c.z, d, hdv));
  x += attn_fix_pv(t, p.w, s.w, attn_fix_row(ATTN_FIX_V, c.w, d, hdv));
  return x;
}

// q . k over dims d..d+3 for the keys whose K rows start at b.
fn attn_fix_dot4(q: vec4<f32>, b: vec4<u32>, d: u32) -> vec4<f32> {
  let hd = P.head_dim;
  return vec4<f32>(dot(q, attn_fix_row(ATTN_FIX_K, b.x, d, hd)),
                   dot(q, attn_fix_row(ATTN_FIX_K, b.y, d, hd)),
                   dot(q, attn_fix_row(ATTN_FIX_K, b.z, d, hd)),
                   dot(q, attn_fix_row(ATTN_FIX_K, b.w, d, hd)));
}

// Scores of keys j (whose q . k are x) as the kernels finish them, and
// their weights against m: 0 for keys past vis and non-finite scores.
fn attn_fix_score(x: vec4<f32>, m_row: u32, j: vec4<u32>) -> vec4<f32> {
  let t = x * P.scale;
  return vec4<f32>(attn_masked(attn_cap(t.x), m_row + j.x),
                   attn_masked(attn_cap(t.y), m_row + j.y),
                   attn_masked(attn_cap(t.z), m_row + j.z),
                   attn_masked(attn_cap(t.w), m_row + j.w));
}
fn attn_fix_w(s: vec4<f32>, j: vec4<u32>, vis: u32, m: f32) -> vec4<f32> {
  let inf = vec4<u32>(0x7f800000u);
  let f = (j < vec4<u32>(vis)) & ((bitcast<vec4<u32>>(s) & inf) != inf);
  return select(vec4<f32>(0.0f),
                vec4<f32>(attn_exp(s.x - m), attn_exp(s.y - m),
                          attn_exp(s.z - m), attn_exp(s.w - m)),
                f);
}

// The fix-up pass of launch row i of Q head bh, whose scores' final max
// is m over its visible keys below vis (from the invocation's key block
// on): it rebuilds the vec4s e0 + es * t (t < en) of the row's output, or
// of its state's extras (partial), from every such key, each at its final
// weight.
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
  for (var k0 = attn_kb * P.kb_keys; k0 < vis; k0 += 16u) {
    // keys past vis read the last visible one (in range) at weight 0
    let kl = vec4<u32>(vis - 1u);
    let ka = vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u);
    let kb = ka + vec4<u32>(4u);
    let kc = ka + vec4<u32>(8u);
    let kd = ka + vec4<u32>(12u);
    let ja = min(ka, kl);
    let jb = min(kb, kl);
    let jc = min(kc, kl);
    let jd = min(kd, kl);
    let ba = vec4<u32>(k_head) + ja * P.ks.z;
    let bb = vec4<u32>(k_head) + jb * P.ks.z;
    let bc = vec4<u32>(k_head) + jc * P.ks.z;
    let bd = vec4<u32>(k_head) + jd * P.ks.z;
    var sa = vec4<f32>(0.0f);
    var sb = vec4<f32>(0.0f);
    var sc = vec4<f32>(0.0f);
    var sd = vec4<f32>(0.0f);
    for (var d4 = 0u; d4 < hd4; d4++) {
      let d = 4u * d4;
      let q = attn_fix_row(ATTN_FIX_Q, q_row, d, hd);
      sa += attn_fix_dot4(q, ba, d);
      sb += attn_fix_dot4(q, bb, d);
      sc += attn_fix_dot4(q, bc, d);
      sd += attn_fix_dot4(q, bd, d);
    }
    sa = attn_fix_score(sa, m_row, ja);
    sb = attn_fix_score(sb, m_row, jb);
    sc = attn_fix_score(sc, m_row, jc);
    sd = attn_fix_score(sd, m_row, jd);
    let pa = attn_fix_w(sa, ka, vis, m);
    let pb = attn_fix_w(sb, kb, vis, m);
    let pc = attn_fix_w(sc, kc, vis, m);
    let pd = attn_fix_w(sd, kd, vis, m);
    l += dot(pa + pb + pc + pd, vec4<f32>(1.0f));
    let ca = vec4<u32>(v_head) + ja * P.vs.z;
    let cb = vec4<u32>(v_head) + jb * P.vs.z;
    let cc = vec4<u32>(v_head) + jc * P.vs.z;
    let cd = vec4<u32>(v_head) + jd * P.vs.z;
    for (var t = 0u; t < en; t++) {
      let d = 4u * (e0 + es * t);
      if (d >= P.head_dim_v) {
        continue;  // the tiles form's vec4s past the head size
      }
      let none = vec4<f32>(-attn_inf());
      var top = AttnTop(none, none, none);
      var y = attn_fix_ld(o_row, d);
      y = attn_fix_pv4(&top, d, y, pa, sa, ca);
      y = attn_fix_pv4(&top, d, y, pb, sb, cb);
      y = attn_fix_pv4(&top, d, y, pc, sc, cc);
      y = attn_fix_pv4(&top, d, y, pd, sd, cd);
      attn_fix_st(o_row, d, y);
      if (attn_partial()) {
        attn_fix_top_st(o_row, d, top);
      }
    }
  }
  attn_fix_end(o_row, l, e0, es, en);
}
