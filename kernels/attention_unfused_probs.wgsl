// The weights of a window of rows and keys (attention_unfused.wgsl): s :=
// exp(s - m) for the keys a row sees with a finite score, else 0. One
// invocation per score.

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.rows * P.keys) { return; }
  let r = t / P.keys;
  let j = t % P.keys;
  let at = r * P.ld_s + j;
  let s = s_ld(at);
  var p = 0.0f;
  if (j < uf_seen(r) && uf_finite(s)) {
    p = uf_exp(s - st_ld(2u * r));
  }
  s_st(at, p);
}
