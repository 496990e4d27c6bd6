// norm_apply.wgsl's elements, one at a time.
fn norm_write(first: u32, cnt: u32, at0: vec3<u32>) {
  var at = at0;
  for (var j = 0u; j < cnt; j++) {
    let e = at.x * P.in_so + at.y * P.in_sr + at.z;
    y_st(e, norm_y(e, at));
    at = norm_next(at);
  }
}
