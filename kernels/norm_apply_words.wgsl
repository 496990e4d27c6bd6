// norm_apply.wgsl's elements of a 2-byte y, two a word (the host picks it
// where the launch's box is contiguous, so element e is the box's first +
// e, y's element 0 is at a word's start and P.items is even: each
// invocation's elements are whole words, but for the box's last one).
fn norm_write(first: u32, cnt: u32, at0: vec3<u32>) {
  var at = at0;
  for (var j = 0u; j < cnt; j += 2u) {
    let e = first + j;
    let lo = norm_y(e, at);
    at = norm_next(at);
    let two = j + 1u < cnt;
    var hi = 0.0f;
    if (two) {
      hi = norm_y(e + 1u, at);
      at = norm_next(at);
    }
    y_stw(e >> 1u, lo, hi, true, two);
  }
}
