// The scores of a window of rows and keys (attention_unfused.wgsl): each
// invocation takes one row, replaces its scores by softcap(s) + mask (in
// place, for the probs step) and folds the visible ones into the row's
// state (m, l) in st, online; NaN or +inf marks the row bad (l = NaN).

// softcap * tanh(x / softcap), NaN kept; +inf becomes softcap, as in
// attn_cap (attention_common.wgsl).
fn uf_cap(x: f32) -> f32 {
  if (SOFTCAP == 0u) { return x; }
  let t = x / P.softcap;
  return select(P.softcap * tanh(clamp(t, -10.0f, 10.0f)), t, uf_is_nan(t));
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let r = wg_linear_group(wid, nwg) * 64u + li;
  if (r >= P.rows) { return; }
  var m = 0.0f;
  var l = 0.0f;  // 0: no finite score yet
  if (P.first == 0u) {
    m = st_ld(2u * r);
    l = st_ld(2u * r + 1u);
  }
  var bad = uf_is_nan(l);
  let seen = uf_seen(r);
  for (var j = 0u; j < seen; j++) {
    let at = r * P.ld_s + j;
    let s = attn_masked(uf_cap(s_ld(at)), r * P.ms + j);
    s_st(at, s);
    if (uf_is_nan(s) || bitcast<u32>(s) == 0x7f800000u) {
      bad = true;
    } else if (uf_finite(s)) {
      if (l == 0.0f) {
        m = s;
        l = 1.0f;
      } else if (s > m) {
        l = l * uf_exp(m - s) + 1.0f;
        m = s;
      } else {
        l += uf_exp(s - m);
      }
    }
  }
  // keys seen, none with a finite score: exp(-inf - -inf) is NaN
  if (P.last == 1u && l == 0.0f && uf_visible(P.row0 + r) > 0u) {
    bad = true;
  }
  st_st(2u * r, m);
  st_st(2u * r + 1u, select(l, uf_nan(), bad));
}
