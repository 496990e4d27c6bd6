// The element-wise driver for a 2-byte output `out` stored by whole words
// (wg_launch.word_stores): invocation by invocation over out's words, each
// computing the one or two elements its word holds through the kernel
// before this one (fn elem_count() -> u32 and fn elem(i: u32) -> f32) and
// storing them in one write. Without it, neighbouring invocations write
// the halves of one word with two atomic operations each, which CPU
// adapters run one lane at a time. Each invocation handles up to 4 words,
// a workgroup of 64 then 256 words (512 elements).

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let base = wg_linear_group(wid, nwg) * 256u + li;
  let n = elem_count();
  for (var j = 0u; j < 4u; j++) {
    let u = base + j * 64u;
    // out's element in the word's low half: wraps past n in a first word
    // whose low half is not out's
    let i = 2u * u - out_lead();
    let lo = i < n;
    let hi = i + 1u < n;
    if (!lo && !hi) { return; }
    var a = 0.0;
    var b = 0.0;
    if (lo) { a = elem(i); }
    if (hi) { b = elem(i + 1u); }
    out_stw(u, a, b, lo, hi);
  }
}
