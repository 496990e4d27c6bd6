// O of a window of rows and output dims over a window of keys
// (attention_unfused.wgsl): o = (first ? 0 : o) + sum_j p_j v_j / l (stored
// by uf_put: attention_unfused_o.wgsl or attention_unfused_ox.wgsl), where
// keys of weight 0 add nothing at all, so that a NaN or infinite value of
// a key that is masked (-inf), hidden, or whose weight underflowed does not
// reach the row, as in attn_pv (attention_common.wgsl). l = NaN (a bad row)
// makes the row NaN; l = 0 (no key seen) zeros. One invocation per (row,
// dim).

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 64u + li;
  if (t >= P.rows * P.dims) { return; }
  let r = t / P.dims;
  let d = t % P.dims;
  var acc = 0.0f;
  for (var j = 0u; j < P.keys; j++) {
    let p = p_ld(r * P.ld_s + j);
    if (p != 0.0f) {
      acc += p * v_ld(j * P.vs + d);
    }
  }
  let l = st_ld(2u * r + 1u);
  var x = 0.0f;
  if (bitcast<u32>(l) != 0u) {
    x = acc / l;
  }
  uf_put(r, d, x);
}
