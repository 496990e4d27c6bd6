// Combines the partial softmax states of an attention split over key blocks
// (host: src/webgpu/attention.c; the states come from kernels/attention.wgsl
// with partial == 1): the standard split-KV ("flash-decoding") merge. A
// state row is the unnormalised output acc_b (head_dim values), then m_b
// and l_b, then four extras per dim (attn_fix, attention_fix*.wgsl); the
// operand p holds nblk blocks of rows states each. With
//   M = max_b m_b (over blocks with l_b > 0),
//   L = sum_b exp(m_b - M) l_b,  A = sum_b exp(m_b - M) acc_b
// the output is A / L (zeros where no block saw a key, L == 0) when
// last == 1, else the merged state (A, M, L) for another combine round.
// States also carry the non-finite score rules of attention_common.wgsl
// (attn_state_m, attn_state_l), merged below. The merge of a row and a dim
// is here; the launch's entry point in the file after this one:
// attention_combine_main.wgsl (one invocation per (row, dim), O or a
// state) or attention_combine_words.wgsl (two dims an invocation, a
// 2-byte O stored by whole words).
//
// Non-finite values of V: where acc_b ends non-finite its block read an
// infinity or NaN of V (or overflowed), and the extras hold the finite
// part of acc_b and, for +inf, -inf and NaN, the largest score of a key of
// that value. Only here is M known: such a value reaches the row iff that
// score is at most 87 below M (its weight exp(s - M) is not 0, attn_exp),
// and then the dim is what IEEE gives for the values that reach it. A
// merged state keeps the rule: a NaN in acc, the finite part and each
// kind's largest score in its extras.

struct Params {
  off: vec4<u32>,
  rows: u32,  // query rows per block
  hd: u32,    // head_dim_v
  nblk: u32,  // blocks combined
  last: u32,  // 1: write O (cmb_o_row); 0: a state (5 * hd + 2)
  // O's row r is row r % rq of head r / rq (numbered b * heads + h),
  // o_bs, o_hs and o_rs elements apart, less o_org (wrapping in u32: the
  // difference is exact inside the binding)
  o_rs: u32,
  rq: u32,
  heads: u32,
  o_hs: u32,
  o_bs: u32,
  o_org: u32,
  pad0: u32,
  pad1: u32,
}

fn cmb_o_row(row: u32) -> u32 {
  let bh = row / P.rq;
  return (bh / P.heads) * P.o_bs + (bh % P.heads) * P.o_hs +
         (row % P.rq) * P.o_rs - P.o_org;
}

// Through a var: a constant bitcast to inf/NaN is a shader-creation error
// in Tint.
fn cmb_nan() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }
fn cmb_neg_inf() -> f32 { var b = 0xff800000u; return bitcast<f32>(b); }
fn cmb_inf() -> f32 { var b = 0x7f800000u; return bitcast<f32>(b); }

// Decided on the bit pattern: compilers may fold comparisons with NaN.
fn cmb_finite(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// exp of x <= 0; far below the float range it is exactly 0.
fn cmb_exp(x: f32) -> f32 {
  return select(exp(max(x, -87.0f)), 0.0f, x < -87.0f);
}

// What the blocks of a state row say of the row as a whole: the largest
// m of those with l > 0, and which kinds of block there were.
struct CmbRow {
  m: f32,
  seen: bool, // a block with l > 0
  bad: bool,  // a block with l = NaN
  keys: bool, // a block that saw keys
}

// A state with l = NaN saw a NaN or +inf score (the row is NaN); one with
// l = 0 and m = -inf saw keys that all scored -inf (the row is NaN unless
// another block saw a finite score); see attn_state_m/_l.
fn cmb_row(row: u32) -> CmbRow {
  let rs = 5u * P.hd + 2u;  // row stride of a state
  let bs = P.rows * rs;  // block stride
  var r = CmbRow(0.0f, false, false, false);
  for (var b = 0u; b < P.nblk; b++) {
    let at = b * bs + row * rs + P.hd;
    let mb = p_ld(at);
    let lb = p_ld(at + 1u);
    let lbits = bitcast<u32>(lb) & 0x7fffffffu;
    if (lbits > 0x7f800000u) {
      r.bad = true;
    } else if (lb > 0.0f) {
      r.m = select(mb, max(r.m, mb), r.seen);
      r.seen = true;
      r.keys = true;
    } else if (bitcast<u32>(mb) == 0xff800000u) {
      r.keys = true;
    }
  }
  return r;
}

// Dim d of the row merged over the blocks: L, the sum's finite part, whether
// a block's dim came from its extras, and the largest scores of +inf, -inf
// and NaN values.
struct CmbDim {
  l: f32,
  acc: f32,
  fixed: bool,
  top: vec3<f32>,
}

fn cmb_dim(row: u32, d: u32, m: f32) -> CmbDim {
  let rs = 5u * P.hd + 2u;
  let bs = P.rows * rs;
  var c = CmbDim(0.0f, 0.0f, false, vec3<f32>(-cmb_inf()));
  for (var b = 0u; b < P.nblk; b++) {
    let at = b * bs + row * rs;
    let lb = p_ld(at + P.hd + 1u);
    if (lb > 0.0f && (bitcast<u32>(lb) & 0x7fffffffu) <= 0x7f800000u) {
      let w = cmb_exp(p_ld(at + P.hd) - m);
      c.l += w * lb;
      var a = p_ld(at + d);
      if (!cmb_finite(a)) {
        let x = at + P.hd + 2u + 4u * d;
        a = p_ld(x);
        c.top = max(c.top, vec3<f32>(p_ld(x + 1u), p_ld(x + 2u), p_ld(x + 3u)));
        c.fixed = true;
      }
      // a block of weight 0 adds nothing, not 0 * inf (attn_rescale)
      if (w > 0.0f) {
        c.acc += w * a;
      }
    }
  }
  return c;
}

// O's value at dim c of row r.
fn cmb_o(r: CmbRow, c: CmbDim) -> f32 {
  var x = select(0.0f, c.acc / c.l, c.l > 0.0f);
  // values of V that reach the row (scores at most 87 below m)
  let hit = !(c.top - vec3<f32>(r.m) < vec3<f32>(-87.0f));
  if (hit.x) { x = cmb_inf(); }
  if (hit.y) { x = -cmb_inf(); }
  if (hit.z || (hit.x && hit.y)) { x = cmb_nan(); }
  if (r.bad || (r.keys && !r.seen)) { x = cmb_nan(); }
  return x;
}
