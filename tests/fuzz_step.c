/* One fuzz step: operands placed at random offsets in allocations mirrored
 * on both contexts (several in one allocation, aliases where the API allows
 * them), guards of random bits everywhere else, the call issued on both,
 * the float64 reference, and the check of every downloaded element. */
#include "fuzz_step.h"

#include "dtype_ref.h"
#include "ops_ref.h"
#include "webgpu/wg.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const fz_backend[2] = {"webgpu", "cpu"};

static void *zalloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stdout, "FUZZ out of host memory\n");
    exit(3);
  }
  return p;
}

/* ---- freed addresses ---------------------------------------------------- */

static wgc_ptr freed[64][2];
static size_t freed_count;

void fz_remember_freed(wgc_ptr webgpu, wgc_ptr cpu) {
  freed[freed_count % 64][0] = webgpu;
  freed[freed_count % 64][1] = cpu;
  freed_count++;
}

bool fz_stale(fz_rng *r, wgc_ptr out[2]) {
  if (!freed_count)
    return false;
  size_t n = freed_count < 64 ? freed_count : 64;
  size_t i = fz_below(r, n);
  out[0] = freed[i][0];
  out[1] = freed[i][1];
  return true;
}

/* ---- operands and placement --------------------------------------------- */

int fz_add_opnd(fz_pending *p, const char *name, size_t len, bool output,
                int alias) {
  fz_opnd *o = &p->op[p->nopnd];
  o->name = name;
  o->len = len;
  o->output = output;
  o->alias = alias;
  return p->nopnd++;
}

static size_t gap(fz_pending *p) {
  return p->s.gap ? fz_below(&p->data, (size_t)p->s.gap + 1) : 0;
}

void fz_place(fz_pending *p) {
  int order[FZ_MAX_OPND];
  for (int i = 0; i < p->nopnd; i++)
    order[i] = i;
  for (int i = p->nopnd - 1; i > 0; i--) {
    int j = (int)fz_below(&p->data, (size_t)i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  size_t cursor = 0;
  for (int oi = 0; oi < p->nopnd; oi++) {
    fz_opnd *o = &p->op[order[oi]];
    if (o->alias >= 0)
      continue;
    /* An empty operand still has an address to validate. */
    size_t len = o->len ? o->len : 1;
    if (p->s.pack) {
      if (!p->nalloc)
        p->nalloc = 1;
      cursor += gap(p);
      o->alloc = 0;
      o->off = cursor;
      cursor += len;
      p->al[0].n = cursor;
    } else {
      o->alloc = p->nalloc++;
      o->off = gap(p);
      p->al[o->alloc].n = o->off + len;
    }
  }
  for (int i = 0; i < p->nopnd; i++)
    if (p->op[i].alias >= 0) {
      p->op[i].alloc = p->op[p->op[i].alias].alloc;
      p->op[i].off = p->op[p->op[i].alias].off;
    }
  for (int a = 0; a < p->nalloc; a++) {
    fz_alloc *al = &p->al[a];
    al->n += gap(p);
    al->init = zalloc(al->n * sizeof(float));
    fz_fill(&p->data, al->init, al->n, FZ_DIST_BITS, 1, 0, 0);
  }
}

float *fz_in(fz_pending *p, int v, int opnd) {
  fz_alloc *al = &p->al[p->op[opnd].alloc];
  return (v ? al->flush : al->init) + p->op[opnd].off;
}

wgc_ptr fz_addr(const fz_pending *p, int opnd, int b) {
  return p->al[p->op[opnd].alloc].p[b] + 4 * (wgc_ptr)p->op[opnd].off;
}

void fz_want_alloc(fz_pending *p, size_t nout) {
  p->nout = nout;
  p->oa = zalloc(nout * sizeof *p->oa);
  p->opos = zalloc(nout * sizeof *p->opos);
  for (int v = 0; v < 2; v++) {
    p->w[v].v = zalloc(nout * sizeof(double));
    p->w[v].tol = zalloc(nout * sizeof(double));
    p->w[v].len = zalloc(nout);
  }
}

void fz_map_contiguous(fz_pending *p, size_t from, int opnd, size_t len) {
  for (size_t i = 0; i < len; i++) {
    p->oa[from + i] = (uint8_t)p->op[opnd].alloc;
    p->opos[from + i] = p->op[opnd].off + i;
  }
}

/* Input values for an operand's whole range. */
static void fill_opnd(fz_pending *p, int opnd, int dist, double mag) {
  fz_fill(&p->data, fz_in(p, 0, opnd), p->op[opnd].len, dist, mag, p->s.sp,
          p->s.spk);
}

/* Allocates and uploads every allocation on both contexts; makes the
 * flushed copies. */
static bool upload_all(fz_env *e, fz_pending *p, char *msg, size_t size) {
  for (int a = 0; a < p->nalloc; a++) {
    fz_alloc *al = &p->al[a];
    al->flush = zalloc(al->n * sizeof(float));
    for (size_t i = 0; i < al->n; i++)
      al->flush[i] = fz_flush(al->init[i]);
    for (int b = 0; b < 2; b++) {
      wgc_status st = wgc_alloc(e->ctx[b], al->n * 4, &al->p[b]);
      if (st == WGC_OK)
        st = wgc_upload(e->ctx[b], al->p[b], al->init, al->n * 4);
      if (st != WGC_OK) {
        snprintf(msg, size, "%s: alloc/upload of %zu bytes: %s (%s)",
                 fz_backend[b], al->n * 4, wgc_status_name(st),
                 wgc_last_error(e->ctx[b]));
        return false;
      }
    }
  }
  return true;
}

static size_t or_one(size_t v) { return v ? v : 1; }

bool fz_upload_all(fz_env *e, fz_pending *p, char *msg, size_t size) {
  return upload_all(e, p, msg, size);
}

void fz_fill_opnd(fz_pending *p, int opnd, int dist, double mag) {
  fill_opnd(p, opnd, dist, mag);
}

/* ---- the operations ------------------------------------------------------ */

typedef struct gemm_geo {
  size_t ar, ac, br, bc; /* stored rows and columns */
  size_t lda, ldb, ldc, spa, spb, spc, stra, strb, strc, bc_count;
} gemm_geo;

static gemm_geo gemm_geometry(const fz_step *s) {
  gemm_geo g;
  wgc_layout L = (wgc_layout)s->op;
  ref_stored_dims((wgc_transpose)s->ta, s->m, s->k, &g.ar, &g.ac);
  ref_stored_dims((wgc_transpose)s->tb, s->k, s->n, &g.br, &g.bc);
  g.lda = ref_min_ld(L, g.ar, g.ac) + s->lda;
  g.ldb = ref_min_ld(L, g.br, g.bc) + s->ldb;
  g.ldc = ref_min_ld(L, s->m, s->n) + s->ldc;
  g.spa = ref_span(L, g.lda, g.ar, g.ac);
  g.spb = ref_span(L, g.ldb, g.br, g.bc);
  g.spc = ref_span(L, g.ldc, s->m, s->n);
  g.bc_count = s->batched ? s->batch : 1;
  g.stra = s->batched && !s->sa0 ? g.spa + s->sa : 0;
  g.strb = s->batched && !s->sb0 ? g.spb + s->sb : 0;
  g.strc = s->batched ? g.spc + s->sc : 0;
  return g;
}

static size_t footprint(size_t count, size_t stride, size_t span) {
  return count && span ? (count - 1) * stride + span : 0;
}

/* Values at exactly the elements of a stored matrix, batch by batch;
 * padding between rows keeps its guard bits. */
static void fill_matrix(fz_pending *p, int opnd, size_t rows, size_t cols,
                        size_t ld, size_t stride, size_t count) {
  wgc_layout L = (wgc_layout)p->s.op;
  float *x = fz_in(p, 0, opnd);
  size_t batches = stride ? count : (count ? 1 : 0);
  for (size_t bi = 0; bi < batches; bi++)
    for (size_t r = 0; r < rows; r++)
      for (size_t c = 0; c < cols; c++)
        fz_fill(&p->data, x + bi * stride + ref_index(L, ld, r, c), 1,
                p->s.dist, p->s.mag, p->s.sp, p->s.spk);
}

static wgc_status call_gemm(fz_env *e, fz_pending *p, int b, wgc_ptr a,
                            wgc_ptr bb, wgc_ptr c, const gemm_geo *g,
                            const wgc_gemm_epilogue *ep) {
  const fz_step *s = &p->s;
  if (s->kind == FZ_GEMM_EX) {
    if (s->batched)
      return wgc_gemm_batched_ex(
          e->ctx[b], (wgc_layout)s->op, (wgc_transpose)s->ta,
          (wgc_transpose)s->tb, s->m, s->n, s->k, s->alpha, a, g->lda, g->stra,
          bb, g->ldb, g->strb, s->beta, c, g->ldc, g->strc, s->batch, ep);
    return wgc_gemm_ex(e->ctx[b], (wgc_layout)s->op, (wgc_transpose)s->ta,
                       (wgc_transpose)s->tb, s->m, s->n, s->k, s->alpha, a,
                       g->lda, bb, g->ldb, s->beta, c, g->ldc, ep);
  }
  if (s->batched)
    return wgc_gemm_batched(e->ctx[b], (wgc_layout)s->op, (wgc_transpose)s->ta,
                            (wgc_transpose)s->tb, s->m, s->n, s->k, s->alpha, a,
                            g->lda, g->stra, bb, g->ldb, g->strb, s->beta, c,
                            g->ldc, g->strc, s->batch);
  return wgc_gemm(e->ctx[b], (wgc_layout)s->op, (wgc_transpose)s->ta,
                  (wgc_transpose)s->tb, s->m, s->n, s->k, s->alpha, a, g->lda,
                  bb, g->ldb, s->beta, c, g->ldc);
}

/* Both statuses must be want; false with a message otherwise. */
static bool statuses(fz_env *e, const wgc_status st[2], wgc_status want,
                     char *msg, size_t size) {
  if (st[0] == want && st[1] == want)
    return true;
  snprintf(msg, size,
           "status webgpu %s, cpu %s, want %s (webgpu: \"%s\"; cpu: \"%s\")",
           wgc_status_name(st[0]), wgc_status_name(st[1]),
           wgc_status_name(want), st[0] ? wgc_last_error(e->ctx[0]) : "",
           st[1] ? wgc_last_error(e->ctx[1]) : "");
  return false;
}

bool fz_statuses(fz_env *e, const wgc_status st[2], wgc_status want, char *msg,
                 size_t size) {
  return statuses(e, st, want, msg, size);
}

/* The address of an operand on backend b; an empty output may pass 0. */
#define ADDR(o, b) (zero ? (wgc_ptr)0 : fz_addr(p, (o), (b)))

/* A GEMM operand of type t: its elements are bytes of t starting sh bytes
 * into its first word. */
typedef fz_typed typed_opnd;

static bool is_block(wgc_dtype t) {
  return t == WGC_DTYPE_Q8_0 || t == WGC_DTYPE_Q4_0;
}

static typed_opnd typed_make(int t, const fz_step *s, int i, size_t elems) {
  typed_opnd o = {(wgc_dtype)t, 0, elems};
  if (o.t != WGC_DTYPE_F32 && (s->tsh >> i & 1))
    o.sh = 2;
  return o;
}

static size_t typed_words(typed_opnd o) {
  return (o.sh + dref_bytes(o.t, o.elems) + 3) / 4;
}

static uint8_t *typed_bytes(fz_pending *p, int opnd, typed_opnd o) {
  return (uint8_t *)fz_in(p, 0, opnd) + o.sh;
}

static float dref_float(dref_val x) {
  float f = (float)x.v;
  if (x.nan)
    memcpy(&f, &x.nan, sizeof f);
  return f;
}

/* Values at exactly the elements of a stored typed matrix, encoded as its
 * type (blocks quantized as wgc_quantize does); guards elsewhere. */
static void fill_typed(fz_pending *p, int opnd, typed_opnd o, size_t rows,
                       size_t cols, size_t ld, size_t stride, size_t count) {
  if (o.t == WGC_DTYPE_F32) {
    fill_matrix(p, opnd, rows, cols, ld, stride, count);
    return;
  }
  wgc_layout L = (wgc_layout)p->s.op;
  uint8_t *x = typed_bytes(p, opnd, o);
  size_t batches = stride ? count : (count ? 1 : 0);
  bool blk = is_block(o.t), bf = o.t == WGC_DTYPE_BF16;
  /* blocks run along the contiguous dimension (columns when row-major) */
  size_t step_r = blk && L == WGC_COL_MAJOR ? 32 : 1,
         step_c = blk && L == WGC_ROW_MAJOR ? 32 : 1;
  for (size_t bi = 0; bi < batches; bi++)
    for (size_t r = 0; r < rows; r += step_r)
      for (size_t c = 0; c < cols; c += step_c) {
        size_t e = bi * stride + ref_index(L, ld, r, c);
        float v[32];
        fz_fill(&p->data, v, blk ? 32 : 1, p->s.dist, p->s.mag, p->s.sp,
                p->s.spk);
        if (blk) {
          dref_quant(v, o.t, x + e / 32 * dref_bytes(o.t, 32));
        } else {
          uint32_t u;
          memcpy(&u, v, 4);
          dref_val dv = {v[0], isnan(v[0]) ? u : 0};
          uint16_t h = dref_enc16(dv, bf);
          memcpy(x + 2 * e, &h, 2);
        }
      }
}

/* The operand's elements decoded exactly to f32 (flush: subnormals as
 * zeros, as a device that flushes reads them: f16's below 2^-14, and any
 * type's f32 value below FLT_MIN; bf16 has f32's range). */
static float *typed_decode(fz_pending *p, int opnd, typed_opnd o, bool flush) {
  float *d = zalloc(o.elems * sizeof(float));
  const uint8_t *x = typed_bytes(p, opnd, o);
  for (size_t i = 0; i < o.elems; i++) {
    float f = dref_float(dref_load(x, o.t, i));
    d[i] = flush && fabsf(f) < 0x1p-14f && !isnan(f) && o.t == WGC_DTYPE_F16
               ? copysignf(0.0f, f)
               : f;
    if (flush)
      d[i] = fz_flush(d[i]);
  }
  return d;
}

/* Half an ulp of a 2-byte C at |w| (f16's subnormals at its smallest
 * normal's spacing). */
static double half_ulp(wgc_dtype t, double w) {
  w = fabs(w);
  if (t == WGC_DTYPE_F16)
    return (w < 0x1p-14 ? 0x1p-14 : w) * 0x1p-11;
  if (t == WGC_DTYPE_BF16)
    return w * 0x1p-8 + FLT_MIN;
  return 0.0;
}

/* ---- element-wise operands of a type (dta, dtb, dtc; 0 f32) ------------ */

static int ew_add(fz_pending *p, const char *name, typed_opnd o, bool out,
                  int alias) {
  return fz_add_opnd(p, name, o.t ? typed_words(o) : o.elems, out, alias);
}

/* The operand's elements drawn from dist and encoded as its type; the
 * halves around them keep fill_opnd's random bits. */
static void ew_fill(fz_pending *p, int opnd, typed_opnd o, int dist,
                    double mag) {
  fill_opnd(p, opnd, o.t ? FZ_DIST_BITS : dist, o.t ? 1 : mag);
  if (!o.t)
    return;
  uint8_t *x = typed_bytes(p, opnd, o);
  for (size_t i = 0; i < o.elems; i++) {
    float v;
    uint32_t u;
    fz_fill(&p->data, &v, 1, dist, mag, p->s.sp, p->s.spk);
    memcpy(&u, &v, 4);
    dref_val dv = {v, isnan(v) ? u : 0};
    uint16_t h = dref_enc16(dv, o.t == WGC_DTYPE_BF16);
    memcpy(x + 2 * i, &h, 2);
  }
}

/* Backend variant v's inputs (decoded when typed; free *owned after). */
static const float *ew_in(fz_pending *p, int v, int opnd, typed_opnd o,
                          float **owned) {
  *owned = o.t ? typed_decode(p, opnd, o, v) : NULL;
  return *owned ? *owned : fz_in(p, v, opnd);
}

static void ew_map(fz_pending *p, int O, typed_opnd o, size_t n) {
  if (!o.t) {
    fz_map_contiguous(p, 0, O, n);
    return;
  }
  p->otype = o.t;
  size_t c0 = (4 * p->op[O].off + o.sh) / 2;
  for (size_t i = 0; i < n; i++) {
    p->oa[i] = (uint8_t)p->op[O].alloc;
    p->opos[i] = c0 + i;
  }
}

/* A 2-byte output adds half its ulp to each bound. */
static void ew_round(fz_pending *p, typed_opnd o, size_t n) {
  for (int v = 0; v < 2 && o.t; v++)
    for (size_t i = 0; i < n; i++)
      p->w[v].tol[i] += half_ulp(o.t, fabs(p->w[v].v[i]) + p->w[v].tol[i]);
}

fz_typed fz_typed_make(int t, const fz_step *s, int i, size_t elems) {
  return typed_make(t, s, i, elems);
}
int fz_ew_add(fz_pending *p, const char *name, fz_typed o, bool out,
              int alias) {
  return ew_add(p, name, o, out, alias);
}
void fz_ew_fill(fz_pending *p, int opnd, fz_typed o, int dist, double mag) {
  ew_fill(p, opnd, o, dist, mag);
}
const float *fz_ew_in(fz_pending *p, int v, int opnd, fz_typed o,
                      float **owned) {
  return ew_in(p, v, opnd, o, owned);
}
void fz_ew_map(fz_pending *p, int O, fz_typed o, size_t n) {
  ew_map(p, O, o, n);
}
void fz_ew_round(fz_pending *p, fz_typed o, size_t n) { ew_round(p, o, n); }
uint8_t *fz_typed_bytes(fz_pending *p, int opnd, fz_typed o) {
  return typed_bytes(p, opnd, o);
}

static bool build_gemm(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  gemm_geo g = gemm_geometry(s);
  bool ex = s->kind == FZ_GEMM_EX;
  typed_opnd ta = typed_make(ex ? s->dta : 0, s, 0,
                             footprint(g.bc_count, g.stra, g.spa)),
             tb = typed_make(ex ? s->dtb : 0, s, 1,
                             footprint(g.bc_count, g.strb, g.spb)),
             tc = typed_make(ex ? s->dtc : 0, s, 2,
                             footprint(g.bc_count, g.strc, g.spc)),
             tbi = typed_make(ex ? s->dtbias : 0, s, 3,
                              s->bkind == WGC_BIAS_PER_ROW ? s->m : s->n);
  bool typed = ta.t || tb.t || tc.t || tbi.t;
  int A = fz_add_opnd(p, "A", typed_words(ta), false, -1);
  int B = fz_add_opnd(p, "B", typed_words(tb), false, -1);
  int C = fz_add_opnd(p, "C", typed_words(tc), true, -1);
  int Bi =
      ex && s->bias ? fz_add_opnd(p, "bias", typed_words(tbi), false, -1) : -1;
  fz_place(p);
  fill_typed(p, A, ta, g.ar, g.ac, g.lda, g.stra, g.bc_count);
  fill_typed(p, B, tb, g.br, g.bc, g.ldb, g.strb, g.bc_count);
  if (s->beta != 0)
    fill_typed(p, C, tc, s->m, s->n, g.ldc, g.strc, g.bc_count);
  if (Bi >= 0) {
    if (tbi.t == WGC_DTYPE_F32) {
      fill_opnd(p, Bi, FZ_DIST_UNIT, s->bmag);
    } else {
      fz_step t = *s;
      t.op = WGC_ROW_MAJOR, t.dist = FZ_DIST_UNIT, t.mag = s->bmag;
      fz_step saved = p->s;
      p->s = t;
      fill_typed(p, Bi, tbi, 1, tbi.elems, tbi.elems, 0, 1);
      p->s = saved;
    }
  }
  if (!upload_all(e, p, msg, size))
    return false;
  bool empty = !s->m || !s->n || !g.bc_count;
  bool zero = empty && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    wgc_gemm_epilogue ep = {.bias =
                                Bi >= 0 ? ADDR(Bi, b) + (zero ? 0 : tbi.sh) : 0,
                            .bias_kind = (wgc_bias_kind)s->bkind,
                            .activation = (wgc_activation)s->act,
                            .a_type = ta.t,
                            .b_type = tb.t,
                            .c_type = tc.t,
                            .bias_type = Bi >= 0 ? tbi.t : WGC_DTYPE_F32};
    /* NULL is the plain call; so is an all-zero epilogue */
    bool plain = Bi < 0 && !s->act && !s->bkind && !typed;
    st[b] = call_gemm(e, p, b, ADDR(A, b) + (zero ? 0 : ta.sh),
                      ADDR(B, b) + (zero ? 0 : tb.sh),
                      ADDR(C, b) + (zero ? 0 : tc.sh), &g,
                      plain && s->nullptrs ? NULL : &ep);
  }
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  size_t nout = empty ? 0 : g.bc_count * s->m * s->n;
  fz_want_alloc(p, nout);
  wgc_layout L = (wgc_layout)s->op;
  /* a 2-byte C's elements are counted in halves of the allocation */
  p->otype = tc.t;
  size_t c0 = tc.t ? (4 * p->op[C].off + tc.sh) / 2 : p->op[C].off;
  for (size_t bi = 0; bi < (empty ? 0 : g.bc_count); bi++)
    for (size_t i = 0; i < s->m; i++)
      for (size_t j = 0; j < s->n; j++) {
        size_t o = (bi * s->m + i) * s->n + j;
        p->oa[o] = (uint8_t)p->op[C].alloc;
        p->opos[o] = c0 + bi * g.strc + ref_index(L, g.ldc, i, j);
      }
  if (!empty)
    for (int v = 0; v < 2; v++) {
      float *da = ta.t ? typed_decode(p, A, ta, v) : NULL;
      float *db = tb.t ? typed_decode(p, B, tb, v) : NULL;
      float *dc = tc.t ? typed_decode(p, C, tc, v) : NULL;
      float *dbi = Bi >= 0 && tbi.t ? typed_decode(p, Bi, tbi, v) : NULL;
      fzr_gemm(s, g.lda, g.ldb, g.ldc, g.stra, g.strb, g.strc,
               da ? da : fz_in(p, v, A), db ? db : fz_in(p, v, B),
               dc ? dc : fz_in(p, v, C), p->w[v]);
      if (ex)
        fz_epilogue_want(s, Bi >= 0 ? (dbi ? dbi : fz_in(p, v, Bi)) : NULL,
                         p->w[v], nout);
      /* C is rounded once to its type from the sum */
      for (size_t o = 0; tc.t && o < nout; o++)
        p->w[v].tol[o] += half_ulp(tc.t, fabs(p->w[v].v[o]) + p->w[v].tol[o]);
      free(da);
      free(db);
      free(dc);
      free(dbi);
    }
  return true;
}

static bool build_conv(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  const wgc_conv2d_desc *d = &s->cv;
  size_t P = 0, Q = 0;
  if (!ref_conv2d_size(d, &P, &Q)) {
    snprintf(msg, size, "the generator made an invalid desc");
    return false;
  }
  /* Beyond wgc.h's limit (padded sizes, dilated spans, strides below
   * 2^31) both backends reject the desc alike and change nothing. */
  const size_t lim = 0x7fffffff;
  if (d->h + 2 * d->pad_h > lim || d->w + 2 * d->pad_w > lim ||
      or_one(d->dilation_h) * (d->r - 1) > lim ||
      or_one(d->dilation_w) * (d->s - 1) > lim || d->stride_h > lim ||
      d->stride_w > lim) {
    int X = fz_add_opnd(p, "input", 4, false, -1);
    int O = fz_add_opnd(p, "output", 4, true, -1);
    fz_place(p);
    fill_opnd(p, X, s->dist, s->mag);
    if (!upload_all(e, p, msg, size))
      return false;
    wgc_status st[2];
    for (int b = 0; b < 2; b++)
      st[b] = wgc_conv2d(e->ctx[b], d, fz_addr(p, X, b), fz_addr(p, X, b), 0,
                         fz_addr(p, O, b));
    if (!statuses(e, st, WGC_ERR_INVALID_ARGUMENT, msg, size))
      return false;
    if (strcmp(wgc_last_error(e->ctx[0]), wgc_last_error(e->ctx[1]))) {
      snprintf(msg, size, "conv2d beyond 2^31: webgpu \"%s\", cpu \"%s\"",
               wgc_last_error(e->ctx[0]), wgc_last_error(e->ctx[1]));
      return false;
    }
    fz_want_alloc(p, 0);
    return true;
  }
  size_t g = or_one(d->groups);
  size_t nx = d->n * d->c * d->h * d->w, nf = d->k * (d->c / g) * d->r * d->s;
  size_t nout = d->n * d->k * P * Q;
  /* input dta, filter dtb, output dtc, bias dtbias (tsh bits 0, 1, 2, 3) */
  typed_opnd tx = typed_make(s->dta, s, 0, nx),
             tf = typed_make(s->dtb, s, 1, nf),
             to = typed_make(s->dtc, s, 2, nout),
             tb = typed_make(s->dtbias, s, 3, d->k);
  wgc_conv2d_desc dt = *d;
  dt.input_type = tx.t, dt.filter_type = tf.t, dt.output_type = to.t;
  dt.bias_type = tb.t;
  int X = ew_add(p, "input", tx, false, -1);
  int F = ew_add(p, "filter", tf, false, -1);
  int Bi = s->bias ? ew_add(p, "bias", tb, false, -1) : -1;
  int O = ew_add(p, "output", to, true, -1);
  fz_place(p);
  ew_fill(p, X, tx, s->dist, s->mag);
  ew_fill(p, F, tf, s->dist, s->mag);
  if (Bi >= 0)
    ew_fill(p, Bi, tb, FZ_DIST_UNIT, s->bmag);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = wgc_conv2d(e->ctx[b], &dt, ADDR(X, b) + (zero ? 0 : tx.sh),
                       ADDR(F, b) + (zero ? 0 : tf.sh),
                       Bi >= 0 ? ADDR(Bi, b) + (zero ? 0 : tb.sh) : 0,
                       ADDR(O, b) + (zero ? 0 : to.sh));
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, nout);
  ew_map(p, O, to, nout);
  for (int v = 0; v < 2 && nout; v++) {
    float *own[3];
    fzr_conv(d, ew_in(p, v, X, tx, &own[0]), ew_in(p, v, F, tf, &own[1]),
             Bi >= 0 ? ew_in(p, v, Bi, tb, &own[2]) : NULL, p->w[v]);
    free(own[0]), free(own[1]);
    if (Bi >= 0)
      free(own[2]);
  }
  if (nout)
    ew_round(p, to, nout);
  return true;
}

/* Elements from an attention operand's address to its last element. */
static size_t attn_span(wgc_attention_strides st, size_t b, size_t h, size_t sq,
                        size_t dim) {
  if (!b || !h || !sq || !dim)
    return 0;
  return (b - 1) * st.batch + (h - 1) * st.head + (sq - 1) * st.seq + dim;
}

/* An attention operand's values before they are stored: f32 ones in
 * place, a 2-byte one's in a float buffer (*own, freed by attn_store),
 * drawn as fill_opnd draws them. */
static float *attn_values(fz_pending *p, int opnd, typed_opnd o, int dist,
                          double mag, float **own) {
  *own = NULL;
  if (!o.t) {
    fill_opnd(p, opnd, dist, mag);
    return fz_in(p, 0, opnd);
  }
  *own = zalloc(o.elems * sizeof(float) + 1);
  fz_fill(&p->data, *own, o.elems, dist, mag, p->s.sp, p->s.spk);
  return *own;
}

/* A 2-byte operand's values encoded as its type (random bits around). */
static void attn_store(fz_pending *p, int opnd, typed_opnd o, float *own) {
  if (!o.t)
    return;
  fill_opnd(p, opnd, FZ_DIST_BITS, 1);
  uint8_t *x = typed_bytes(p, opnd, o);
  for (size_t i = 0; i < o.elems; i++) {
    uint32_t u;
    memcpy(&u, &own[i], 4);
    dref_val dv = {own[i], isnan(own[i]) ? u : 0};
    uint16_t h = dref_enc16(dv, o.t == WGC_DTYPE_BF16);
    memcpy(x + 2 * i, &h, 2);
  }
  free(own);
}

static bool build_attn(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  wgc_attention_desc d = s->at;
  size_t hkv = d.heads_kv ? d.heads_kv : d.heads, D = d.head_dim;
  size_t Dv = d.head_dim_v ? d.head_dim_v : D;
  wgc_attention_strides qs = fzr_attn_strides(d.q_stride, d.heads, d.seq_q, D);
  wgc_attention_strides ks = fzr_attn_strides(d.k_stride, hkv, d.seq_kv, D);
  wgc_attention_strides vs = fzr_attn_strides(d.v_stride, hkv, d.seq_kv, Dv);
  wgc_attention_strides os = fzr_attn_strides(d.o_stride, d.heads, d.seq_q, Dv);
  size_t nq = attn_span(qs, d.batch, d.heads, d.seq_q, D);
  size_t nk = attn_span(ks, d.batch, hkv, d.seq_kv, D);
  size_t nv = attn_span(vs, d.batch, hkv, d.seq_kv, Dv);
  size_t no = attn_span(os, d.batch, d.heads, d.seq_q, Dv);
  size_t nm =
      s->bias ? attn_span(d.mask_stride, d.batch, d.heads, d.seq_q, d.seq_kv)
              : 0;
  size_t nout = d.batch * d.heads * d.seq_q * Dv;
  /* types from the desc, 2-byte ones shifted by tsh bits 0-4 */
  typed_opnd tq = typed_make(d.q_type, s, 0, nq),
             tk = typed_make(d.k_type, s, 1, nk),
             tv = typed_make(d.v_type, s, 2, nv),
             tm = typed_make(d.mask_type, s, 3, nm),
             to = typed_make(d.o_type, s, 4, no);
  int Qo = ew_add(p, "q", tq, false, -1);
  int K = ew_add(p, "k", tk, false, -1);
  int V = ew_add(p, "v", tv, false, -1);
  int M = s->bias ? ew_add(p, "mask", tm, false, -1) : -1;
  int O = ew_add(p, "o", to, true, -1);
  fz_place(p);
  float *own[4];
  attn_values(p, Qo, tq, s->dist, s->mag, &own[0]);
  attn_values(p, K, tk, s->dist, s->mag, &own[1]);
  float *vvals = attn_values(p, V, tv, s->dist, 1.0, &own[2]);
  own[3] = NULL;
  if (M >= 0) {
    /* -inf entries (masked keys), finite biases, specials as the rest */
    float *m = attn_values(p, M, tm, FZ_DIST_UNIT, s->bmag, &own[3]);
    for (size_t i = 0; i < nm; i++)
      if (fz_chance(&p->data, 0.25))
        m[i] = -INFINITY;
    if (s->bias == 2) {
      /* a rise of 30 to 80 per 8 keys (the kernels' blocks of keys):
       * element i is key i % kv of its row, kv the mask's row stride
       * (gen_attn's strides are multiples of it) */
      wgc_attention_strides ms = d.mask_stride;
      size_t sq = d.seq_q ? d.seq_q : 1;
      size_t kv = ms.seq                ? ms.seq
                  : ms.head             ? ms.head / sq
                  : ms.batch && d.heads ? ms.batch / (d.heads * sq)
                                        : d.seq_kv;
      double rise = (30.0 + 50.0 * fz_unit(&p->data)) / 8.0;
      for (size_t i = 0; kv && i < nm; i++)
        m[i] += (float)(rise * (double)(i % kv));
      /* and infinities and NaN in V, which must reach a row only from
       * keys that end within 87 of its max */
      static const float nf[3] = {INFINITY, -INFINITY, NAN};
      for (size_t i = 0; i < nv; i++)
        if (fz_chance(&p->data, 0.02))
          vvals[i] = nf[fz_below(&p->data, 3)];
    }
  }
  attn_store(p, Qo, tq, own[0]);
  attn_store(p, K, tk, own[1]);
  attn_store(p, V, tv, own[2]);
  if (M >= 0)
    attn_store(p, M, tm, own[3]);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    /* an operand's elements start sh bytes into its first word */
#define TADDR(o, t) (zero ? (wgc_ptr)0 : fz_addr(p, (o), b) + (t).sh)
    d.mask = M >= 0 ? TADDR(M, tm) : 0;
    st[b] = wgc_attention(e->ctx[b], &d, TADDR(Qo, tq), TADDR(K, tk),
                          TADDR(V, tv), TADDR(O, to));
#undef TADDR
  }
  /* Beyond wgc.h's 32-bit limits both backends reject the desc alike and
   * change nothing. */
  size_t bh = d.batch * d.heads;
  if (d.seq_q >> 31 || d.seq_kv >> 31 || D > ((size_t)1 << 28) ||
      Dv > ((size_t)1 << 28) || (d.heads && bh / d.heads != d.batch) ||
      bh > 0xffffffffu) {
    if (!statuses(e, st, WGC_ERR_INVALID_ARGUMENT, msg, size))
      return false;
    if (strcmp(wgc_last_error(e->ctx[0]), wgc_last_error(e->ctx[1]))) {
      snprintf(msg, size, "attention limits: webgpu \"%s\", cpu \"%s\"",
               wgc_last_error(e->ctx[0]), wgc_last_error(e->ctx[1]));
      return false;
    }
    fz_want_alloc(p, 0);
    return true;
  }
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, nout);
  /* a 2-byte O's positions count its elements (ew_map) */
  size_t o0 = to.t ? (4 * p->op[O].off + to.sh) / 2 : p->op[O].off;
  p->otype = to.t;
  for (size_t b = 0; b < d.batch; b++)
    for (size_t h = 0; h < d.heads; h++)
      for (size_t i = 0; i < d.seq_q; i++)
        for (size_t x = 0; x < Dv; x++) {
          size_t o = ((b * d.heads + h) * d.seq_q + i) * Dv + x;
          p->oa[o] = (uint8_t)p->op[O].alloc;
          p->opos[o] = o0 + b * os.batch + h * os.head + i * os.seq + x;
        }
  for (int v = 0; v < 2 && nout; v++) {
    float *f[4];
    fzr_attn(&d, ew_in(p, v, Qo, tq, &f[0]), ew_in(p, v, K, tk, &f[1]),
             ew_in(p, v, V, tv, &f[2]),
             M >= 0 ? ew_in(p, v, M, tm, &f[3]) : (f[3] = NULL), p->w[v]);
    for (int i = 0; i < 4; i++)
      free(f[i]);
  }
  if (nout)
    ew_round(p, to, nout);
  return true;
}

static bool build_reduce(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t nin = ref_count(s->sh.d, s->sh.rank);
  size_t nout = s->sh.d[s->axis] ? nin / s->sh.d[s->axis]
                                 : ref_count(s->sh.d, s->axis) *
                                       ref_count(s->sh.d + s->axis + 1,
                                                 s->sh.rank - s->axis - 1);
  typed_opnd tx = typed_make(s->dta, s, 0, nin),
             to = typed_make(s->dtc, s, 2, nout);
  int X = ew_add(p, "input", tx, false, -1);
  int O = ew_add(p, "output", to, true, -1);
  fz_place(p);
  ew_fill(p, X, tx, s->dist, s->mag);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status want = nout && !s->sh.d[s->axis] && s->op != WGC_REDUCE_SUM
                        ? WGC_ERR_INVALID_ARGUMENT
                        : WGC_OK;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = tx.t || to.t
                ? wgc_reduce_ex(e->ctx[b], (wgc_reduce_op)s->op,
                                ADDR(X, b) + (zero ? 0 : tx.sh), tx.t,
                                ADDR(O, b) + (zero ? 0 : to.sh), to.t, s->sh.d,
                                s->sh.rank, s->axis)
                : wgc_reduce(e->ctx[b], (wgc_reduce_op)s->op, ADDR(X, b),
                             ADDR(O, b), s->sh.d, s->sh.rank, s->axis);
  if (!statuses(e, st, want, msg, size))
    return false;
  if (want != WGC_OK)
    nout = 0;
  fz_want_alloc(p, nout);
  ew_map(p, O, to, nout);
  for (int v = 0; v < 2 && nout; v++) {
    float *own;
    fzr_reduce((wgc_reduce_op)s->op, ew_in(p, v, X, tx, &own), &s->sh, s->axis,
               p->w[v]);
    free(own);
  }
  if (nout)
    ew_round(p, to, nout);
  return true;
}

static void elementwise_want(fz_pending *p, size_t i, double want, double rel,
                             double abs_tol, int v) {
  p->w[v].v[i] = want;
  p->w[v].tol[i] = rel * fabs(want) + abs_tol;
  p->w[v].len[i] = 0;
}

static bool build_unary(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  typed_opnd tx = typed_make(s->dta, s, 0, s->n),
             to = typed_make(s->dtc, s, 2, s->n);
  if (s->inplace)
    to.sh = tx.sh;
  int X = ew_add(p, "input", tx, false, -1);
  int O = ew_add(p, "output", to, true, s->inplace ? X : -1);
  fz_place(p);
  ew_fill(p, X, tx, s->dist, s->mag);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !s->n && s->nullptrs;
  bool typed = tx.t || to.t;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = typed ? wgc_unary_ex(e->ctx[b], (wgc_unary_op)s->op,
                                 ADDR(X, b) + (zero ? 0 : tx.sh), tx.t,
                                 ADDR(O, b) + (zero ? 0 : to.sh), to.t, s->n)
                  : wgc_unary(e->ctx[b], (wgc_unary_op)s->op, ADDR(X, b),
                              ADDR(O, b), s->n);
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, s->n);
  ew_map(p, O, to, s->n);
  double rel, abs_tol;
  ref_unary_bound((wgc_unary_op)s->op, &rel, &abs_tol);
  for (int v = 0; v < 2; v++) {
    float *own;
    const float *x = ew_in(p, v, X, tx, &own);
    for (size_t i = 0; i < s->n; i++)
      elementwise_want(p, i, ref_unary((wgc_unary_op)s->op, x[i]), rel, abs_tol,
                       v);
    free(own);
  }
  ew_round(p, to, s->n);
  return true;
}

static bool build_binary(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  typed_opnd ta = typed_make(s->dta, s, 0, s->n),
             tb = typed_make(s->dtb, s, 1, s->n),
             to = typed_make(s->dtc, s, 2, s->n);
  if (s->inplace == 3)
    tb.sh = ta.sh;
  if (s->inplace == 1 || s->inplace == 2)
    to.sh = s->inplace == 1 ? ta.sh : tb.sh;
  int A = ew_add(p, "a", ta, false, -1);
  int B = ew_add(p, "b", tb, false, s->inplace == 3 ? A : -1);
  int O = ew_add(p, "out", to, true,
                 s->inplace == 1   ? A
                 : s->inplace == 2 ? B
                                   : -1);
  fz_place(p);
  ew_fill(p, A, ta, s->dist, s->mag);
  if (s->inplace != 3)
    ew_fill(p, B, tb, s->dist == FZ_DIST_BASE ? FZ_DIST_EXPON : s->dist,
            s->mag);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !s->n && s->nullptrs;
  bool typed = ta.t || tb.t || to.t;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = typed ? wgc_binary_ex(e->ctx[b], (wgc_binary_op)s->op,
                                  ADDR(A, b) + (zero ? 0 : ta.sh), ta.t,
                                  ADDR(B, b) + (zero ? 0 : tb.sh), tb.t,
                                  ADDR(O, b) + (zero ? 0 : to.sh), to.t, s->n)
                  : wgc_binary(e->ctx[b], (wgc_binary_op)s->op, ADDR(A, b),
                               ADDR(B, b), ADDR(O, b), s->n);
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, s->n);
  ew_map(p, O, to, s->n);
  double rel, abs_tol;
  ref_binary_bound((wgc_binary_op)s->op, &rel, &abs_tol);
  for (int v = 0; v < 2; v++) {
    float *oa, *ob;
    const float *a = ew_in(p, v, A, ta, &oa), *bb = ew_in(p, v, B, tb, &ob);
    for (size_t i = 0; i < s->n; i++)
      elementwise_want(p, i, ref_binary((wgc_binary_op)s->op, a[i], bb[i]), rel,
                       abs_tol, v);
    free(oa);
    free(ob);
  }
  ew_round(p, to, s->n);
  return true;
}

static bool build_bcast(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t osh[16], orank;
  if (!ref_broadcast_shape(s->sh.d, s->sh.rank, s->shb.d, s->shb.rank, osh,
                           &orank)) {
    snprintf(msg, size, "the generator made incompatible shapes");
    return false;
  }
  size_t na = ref_count(s->sh.d, s->sh.rank);
  size_t nb = ref_count(s->shb.d, s->shb.rank);
  size_t nout = ref_count(osh, orank);
  bool same = s->inplace && orank == s->sh.rank &&
              !memcmp(osh, s->sh.d, orank * sizeof(size_t));
  typed_opnd ta = typed_make(s->dta, s, 0, na),
             tb = typed_make(s->dtb, s, 1, nb),
             to = typed_make(s->dtc, s, 2, nout);
  if (same)
    to.sh = ta.sh;
  int A = ew_add(p, "a", ta, false, -1);
  int B = ew_add(p, "b", tb, false, -1);
  int O = ew_add(p, "out", to, true, same ? A : -1);
  fz_place(p);
  ew_fill(p, A, ta, s->dist, s->mag);
  ew_fill(p, B, tb, s->dist, s->mag);
  if (!upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] =
        ta.t || tb.t || to.t
            ? wgc_binary_broadcast_ex(
                  e->ctx[b], (wgc_binary_op)s->op,
                  ADDR(A, b) + (zero ? 0 : ta.sh), ta.t, s->sh.d, s->sh.rank,
                  ADDR(B, b) + (zero ? 0 : tb.sh), tb.t, s->shb.d, s->shb.rank,
                  ADDR(O, b) + (zero ? 0 : to.sh), to.t)
            : wgc_binary_broadcast(e->ctx[b], (wgc_binary_op)s->op, ADDR(A, b),
                                   s->sh.d, s->sh.rank, ADDR(B, b), s->shb.d,
                                   s->shb.rank, ADDR(O, b));
  if (!statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, nout);
  ew_map(p, O, to, nout);
  double rel, abs_tol;
  ref_binary_bound((wgc_binary_op)s->op, &rel, &abs_tol);
  if (nout) {
    for (int v = 0; v < 2; v++) {
      float *oa, *ob;
      const float *a = ew_in(p, v, A, ta, &oa), *bb = ew_in(p, v, B, tb, &ob);
      ref_broadcast((wgc_binary_op)s->op, a, s->sh.d, s->sh.rank, bb, s->shb.d,
                    s->shb.rank, p->w[v].v);
      for (size_t i = 0; i < nout; i++)
        elementwise_want(p, i, p->w[v].v[i], rel, abs_tol, v);
      free(oa);
      free(ob);
    }
    ew_round(p, to, nout);
  }
  return true;
}

static bool build_copy(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  int S = fz_add_opnd(p, "src", s->n, false, -1);
  int D = fz_add_opnd(p, "dst", s->n, true, -1);
  fz_place(p);
  fill_opnd(p, S, FZ_DIST_BITS, 1);
  float *host = NULL;
  if (s->kind == FZ_UPLOAD) {
    host = zalloc(s->n * sizeof(float));
    fz_fill(&p->data, host, s->n, FZ_DIST_BITS, 1, 0, 0);
  }
  if (!upload_all(e, p, msg, size)) {
    free(host);
    return false;
  }
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = host ? wgc_upload(e->ctx[b], fz_addr(p, D, b), host, s->n * 4)
                 : wgc_copy(e->ctx[b], fz_addr(p, D, b), fz_addr(p, S, b),
                            s->n * 4);
  if (!statuses(e, st, WGC_OK, msg, size)) {
    free(host);
    return false;
  }
  fz_want_alloc(p, s->n);
  fz_map_contiguous(p, 0, D, s->n);
  p->bits = zalloc(s->n * sizeof(float));
  memcpy(p->bits, host ? host : fz_in(p, 0, S), s->n * sizeof(float));
  free(host);
  return true;
}

/* A chain of exact operations (neg, abs, relu, max, min, copy) in place,
 * one after another without a download: X and Z take turns holding the
 * current value, Y is the other operand of max and min. */
static bool build_chain(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t n = s->n;
  int X = fz_add_opnd(p, "x", n, true, -1);
  int Y = fz_add_opnd(p, "y", n, false, -1);
  int Z = fz_add_opnd(p, "z", n, true, -1);
  fz_place(p);
  fill_opnd(p, X, s->dist, s->mag);
  fill_opnd(p, Y, s->dist, s->mag);
  if (!upload_all(e, p, msg, size))
    return false;
  float *cur[2] = {zalloc(n * 4), zalloc(n * 4)};
  memcpy(cur[0], fz_in(p, 0, X), n * 4);
  memcpy(cur[1], fz_in(p, 0, Z), n * 4);
  const float *y = fz_in(p, 0, Y);
  int at = 0;                   /* 0: X holds the value, 1: Z */
  double flush_slack = FLT_MIN; /* grows with each doubling */
  int opnd[2] = {X, Z};
  bool ok = true;
  for (size_t step = 0; step < s->k && ok; step++) {
    size_t what = fz_below(&p->data, 7);
    wgc_status st[2];
    for (int b = 0; b < 2; b++) {
      wgc_ptr c = fz_addr(p, opnd[at], b), yy = fz_addr(p, Y, b);
      wgc_ptr other = fz_addr(p, opnd[1 - at], b);
      switch (what) {
      case 0:
      case 1:
      case 2: {
        static const wgc_unary_op u[3] = {WGC_UNARY_NEG, WGC_UNARY_ABS,
                                          WGC_UNARY_RELU};
        st[b] = wgc_unary(e->ctx[b], u[what], c, c, n);
        break;
      }
      case 3:
        st[b] = wgc_binary(e->ctx[b], WGC_BINARY_MAX, c, yy, c, n);
        break;
      case 4:
        st[b] = wgc_binary(e->ctx[b], WGC_BINARY_MIN, yy, c, c, n);
        break;
      case 5:
        st[b] = wgc_copy(e->ctx[b], other, c, n * 4);
        break;
      default:
        st[b] = wgc_binary(e->ctx[b], WGC_BINARY_ADD, c, c, c, n);
        break;
      }
    }
    if (!statuses(e, st, WGC_OK, msg, size)) {
      size_t used = strlen(msg);
      snprintf(msg + used, size - used, " at chain op %zu (%zu)", step, what);
      ok = false;
      break;
    }
    float *v = cur[at];
    for (size_t i = 0; i < n; i++) {
      switch (what) {
      case 0:
        v[i] = -v[i];
        break;
      case 1:
        v[i] = fabsf(v[i]);
        break;
      case 2:
        v[i] = (float)ref_unary(WGC_UNARY_RELU, v[i]);
        break;
      case 3:
        v[i] = (float)ref_binary(WGC_BINARY_MAX, v[i], y[i]);
        break;
      case 4:
        v[i] = (float)ref_binary(WGC_BINARY_MIN, y[i], v[i]);
        break;
      case 5:
        cur[1 - at][i] = v[i];
        break;
      default:
        v[i] = v[i] + v[i]; /* exact: doubling (to inf at worst) */
        break;
      }
      if (what >= 6)
        flush_slack *= 2;
    }
    if (what == 5)
      at = 1 - at;
  }
  if (ok) {
    fz_want_alloc(p, 2 * n);
    fz_map_contiguous(p, 0, X, n);
    fz_map_contiguous(p, n, Z, n);
    /* One value for both references: an adapter that flushes subnormals
     * (SwiftShader) may zero any intermediate below FLT_MIN, and each
     * later doubling doubles what that moved. */
    for (int v = 0; v < 2; v++)
      for (size_t i = 0; i < 2 * n; i++) {
        p->w[v].v[i] = cur[i / n][i % n];
        p->w[v].tol[i] = flush_slack;
      }
  }
  free(cur[0]);
  free(cur[1]);
  return ok;
}

/* ---- issue and check --------------------------------------------------------
 */

static void release(fz_env *e, fz_pending *p) {
  for (int a = 0; a < p->nalloc; a++) {
    fz_alloc *al = &p->al[a];
    if (!al->freed)
      for (int b = 0; b < 2; b++)
        if (al->p[b]) {
          wgc_free(e->ctx[b], al->p[b]);
        }
    if (!al->freed && al->p[0] && al->p[1])
      fz_remember_freed(al->p[0], al->p[1]);
    free(al->init);
    free(al->flush);
  }
  free(p->oa);
  free(p->opos);
  for (int v = 0; v < 2; v++) {
    free(p->w[v].v);
    free(p->w[v].tol);
    free(p->w[v].len);
  }
  free(p->bits);
  free(p);
}

void fz_drop(fz_env *e, fz_pending *p) {
  if (p)
    release(e, p);
}

fz_pending *fz_issue(fz_env *e, const fz_step *s, fz_rng *r, char *msg,
                     size_t size) {
  (void)r;
  fz_pending *p = zalloc(sizeof *p);
  p->s = *s;
  p->data = fz_rng_make(s->dseed);
  bool ok;
  switch (s->kind) {
  case FZ_GEMM:
  case FZ_GEMM_EX:
    ok = build_gemm(e, p, msg, size);
    break;
  case FZ_CONV:
    ok = build_conv(e, p, msg, size);
    break;
  case FZ_ATTN:
    ok = build_attn(e, p, msg, size);
    break;
  case FZ_REDUCE:
    ok = build_reduce(e, p, msg, size);
    break;
  case FZ_UNARY:
    ok = build_unary(e, p, msg, size);
    break;
  case FZ_BINARY:
    ok = build_binary(e, p, msg, size);
    break;
  case FZ_BCAST:
    ok = build_bcast(e, p, msg, size);
    break;
  case FZ_COPY:
  case FZ_UPLOAD:
    ok = build_copy(e, p, msg, size);
    break;
  case FZ_CHAIN:
    ok = build_chain(e, p, msg, size);
    break;
  case FZ_INVALID:
    ok = fz_issue_invalid(e, p, msg, size);
    break;
  case FZ_UNARY_P:
  case FZ_REDUCE_AXES:
  case FZ_ARG:
  case FZ_NORM:
  case FZ_ROTARY:
  case FZ_STRIDED:
  case FZ_GATHER:
  case FZ_WHERE:
  case FZ_POOL:
  case FZ_CAST:
    ok = fz_build_model(e, p, msg, size);
    break;
  default:
    snprintf(msg, size, "unknown step kind %d", s->kind);
    ok = false;
  }
  if (!ok) {
    release(e, p);
    return NULL;
  }
  return p;
}

void fz_free_inputs(fz_env *e, fz_pending *p) {
  bool has_out[FZ_MAX_ALLOC] = {false};
  for (int i = 0; i < p->nopnd; i++)
    if (p->op[i].output)
      has_out[p->op[i].alloc] = true;
  for (int a = 0; a < p->nalloc; a++)
    if (!has_out[a] && !p->al[a].freed && p->al[a].p[0]) {
      for (int b = 0; b < 2; b++)
        wgc_free(e->ctx[b], p->al[a].p[b]);
      fz_remember_freed(p->al[a].p[0], p->al[a].p[1]);
      p->al[a].freed = true;
    }
}

/* ---- downloads, synchronous and asynchronous ------------------------------
 */

typedef struct fz_cb {
  int fired;
  wgc_status st;
  wgc_context *ctx;
  bool reenter;         /* registers another callback when it fires */
  struct fz_cb *child;  /* that one */
  wgc_status child_reg; /* its registration status */
} fz_cb;

static void on_done(wgc_status st, void *user) {
  fz_cb *cb = user;
  cb->fired++;
  cb->st = st;
  if (cb->reenter && cb->fired == 1) {
    cb->child = zalloc(sizeof *cb->child);
    cb->child->ctx = cb->ctx;
    cb->child_reg = wgc_synchronize_async(cb->ctx, on_done, cb->child);
  }
}

/* Whether every callback (and those they registered) fired. */
static bool all_fired(fz_cb **cbs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!cbs[i]->fired)
      return false;
    if (cbs[i]->child && cbs[i]->child_reg == WGC_OK && !cbs[i]->child->fired)
      return false;
  }
  return true;
}

static size_t count_fired(fz_cb **cbs, size_t n) {
  size_t fired = 0;
  for (size_t i = 0; i < n; i++)
    fired += cbs[i]->fired > 0;
  return fired;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Downloads every live allocation of p from both contexts into got[a][b].
 * false: a status or a callback went wrong (message in msg). */
static bool download_all(fz_env *e, fz_pending *p, float *got[][2], int how,
                         fz_rng *r, char *msg, size_t size) {
  fz_cb *cbs[2 * FZ_MAX_ALLOC + 2];
  size_t ncb = 0;
  bool ok = true;
  for (int a = 0; a < p->nalloc && ok; a++) {
    if (p->al[a].freed)
      continue;
    for (int b = 0; b < 2 && ok; b++) {
      wgc_status st;
      if (how == 0) {
        st = wgc_download(e->ctx[b], got[a][b], p->al[a].p[b], p->al[a].n * 4);
      } else {
        fz_cb *cb = zalloc(sizeof *cb);
        cb->ctx = e->ctx[b];
        cb->reenter = r && fz_chance(r, 0.3);
        st = wgc_download_async(e->ctx[b], got[a][b], p->al[a].p[b],
                                p->al[a].n * 4, on_done, cb);
        if (st == WGC_OK)
          cbs[ncb++] = cb;
        else
          free(cb);
      }
      if (st != WGC_OK) {
        snprintf(msg, size, "%s: download of allocation %d: %s (%s)",
                 fz_backend[b], a, wgc_status_name(st),
                 wgc_last_error(e->ctx[b]));
        ok = false;
      }
    }
  }
  if (how == 0)
    return ok;
  if (how == 1) {
    for (int b = 0; b < 2; b++)
      wgc_synchronize(e->ctx[b]);
  } else {
    for (int b = 0; b < 2; b++) {
      fz_cb *cb = zalloc(sizeof *cb);
      cb->ctx = e->ctx[b];
      cb->reenter = r && fz_chance(r, 0.3);
      if (wgc_synchronize_async(e->ctx[b], on_done, cb) == WGC_OK)
        cbs[ncb++] = cb;
      else
        free(cb);
    }
  }
  /* Well inside the parent's hang limit, so a lost callback is reported as
   * one. */
  double deadline = now_s() + 20;
  while (!all_fired(cbs, ncb) && now_s() < deadline) {
    for (int b = 0; b < 2; b++)
      wgc_poll(e->ctx[b]);
    if (!all_fired(cbs, ncb)) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  for (size_t i = 0; i < ncb && ok; i++) {
    fz_cb *cb = cbs[i];
    const char *be = cb->ctx == e->ctx[0] ? "webgpu" : "cpu";
    if (cb->fired != 1 || cb->st != WGC_OK) {
      char state[512] = "";
      if (cb->ctx == e->ctx[0])
        wg_describe(cb->ctx, state, sizeof state);
      snprintf(msg, size,
               "%s: async callback %zu of %zu fired %d times (status %s) "
               "within 20 s of polling; %zu of them fired; %s",
               be, i, ncb, cb->fired, wgc_status_name(cb->st),
               count_fired(cbs, ncb), state);
      ok = false;
    } else if (cb->child && cb->child_reg == WGC_OK &&
               (cb->child->fired != 1 || cb->child->st != WGC_OK)) {
      snprintf(msg, size,
               "%s: wgc_synchronize_async registered inside a callback fired "
               "%d times (status %s) within 20 s of polling",
               be, cb->child->fired, wgc_status_name(cb->child->st));
      ok = false;
    } else if (cb->child && cb->child_reg != WGC_OK) {
      snprintf(msg, size,
               "%s: wgc_synchronize_async inside a callback returned %s", be,
               wgc_status_name(cb->child_reg));
      ok = false;
    }
  }
  /* A callback that never fired may still write later: keep its memory. */
  if (all_fired(cbs, ncb))
    for (size_t i = 0; i < ncb; i++) {
      free(cbs[i]->child);
      free(cbs[i]);
    }
  return ok;
}

static void hexf(char *buf, size_t size, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  snprintf(buf, size, "%.9g (0x%08x)", f, u);
}

/* Which operand holds element pos of allocation a (for messages). */
static const char *owner(const fz_pending *p, int a, size_t pos) {
  for (int i = 0; i < p->nopnd; i++)
    if (p->op[i].alloc == a && pos >= p->op[i].off &&
        pos < p->op[i].off + (p->op[i].len ? p->op[i].len : 1))
      return p->op[i].name;
  return "no operand (a guard)";
}

/* Inputs behind output element i, for element-wise messages. */
static void describe(const fz_pending *p, size_t i, char *buf, size_t size) {
  buf[0] = 0;
  const fz_step *s = &p->s;
  if (s->kind == FZ_UNARY) {
    const float *x = p->al[p->op[0].alloc].init + p->op[0].off;
    char a[64];
    hexf(a, sizeof a, x[i]);
    snprintf(buf, size, " for %s(%s)", ref_unary_name((wgc_unary_op)s->op), a);
  } else if (s->kind == FZ_BINARY) {
    const float *x = p->al[p->op[0].alloc].init + p->op[0].off;
    const float *y = p->al[p->op[1].alloc].init + p->op[1].off;
    char a[64], b[64];
    hexf(a, sizeof a, x[i]);
    hexf(b, sizeof b, y[i]);
    snprintf(buf, size, " for %s(%s, %s)",
             ref_binary_name((wgc_binary_op)s->op), a, b);
  } else if (s->kind == FZ_BCAST) {
    /* numpy's index arithmetic, as ref_broadcast does it. */
    size_t shape[16], r, ia = 0, ib = 0, sa = 1, sb = 1, rem = i;
    ref_broadcast_shape(s->sh.d, s->sh.rank, s->shb.d, s->shb.rank, shape, &r);
    for (size_t d = r; d-- > 0;) {
      size_t idx = rem % shape[d];
      rem /= shape[d];
      if (d >= r - s->sh.rank) {
        size_t dim = s->sh.d[d - (r - s->sh.rank)];
        ia += (dim == 1 ? 0 : idx) * sa;
        sa *= dim;
      }
      if (d >= r - s->shb.rank) {
        size_t dim = s->shb.d[d - (r - s->shb.rank)];
        ib += (dim == 1 ? 0 : idx) * sb;
        sb *= dim;
      }
    }
    const float *x = p->al[p->op[0].alloc].init + p->op[0].off;
    const float *y = p->al[p->op[1].alloc].init + p->op[1].off;
    char a[64], b[64];
    hexf(a, sizeof a, x[ia]);
    hexf(b, sizeof b, y[ib]);
    snprintf(buf, size, " for %s(%s, %s)",
             ref_binary_name((wgc_binary_op)s->op), a, b);
  } else if ((s->kind == FZ_GEMM || s->kind == FZ_GEMM_EX) && s->m && s->n) {
    snprintf(buf, size, " (batch %zu, C[%zu,%zu])", i / (s->m * s->n),
             i / s->n % s->m, i % s->n);
  } else if (s->kind >= FZ_GEMM_EX) {
    fz_describe_model(p, i, buf, size);
  } else if (s->kind == FZ_ATTN && s->at.head_dim) {
    size_t D = s->at.head_dim_v ? s->at.head_dim_v : s->at.head_dim;
    size_t row = i / D;
    snprintf(buf, size, " (query row %zu of head %zu, batch %zu; column %zu)",
             row % or_one(s->at.seq_q), row / or_one(s->at.seq_q) % s->at.heads,
             row / or_one(s->at.seq_q) / s->at.heads, i % D);
  }
}

/* The worst error/bound ratio of each kind and backend over the passing
 * elements with a finite, strict reference (the nearer reference of the
 * two), printed at the end of a seed. */
static double worst[FZ_KIND_COUNT][2];

static void note_ratio(const fz_pending *p, int b, float g, size_t i) {
  double r = INFINITY;
  for (int v = 0; v < 2; v++) {
    double w = p->w[v].v[i], t = p->w[v].tol[i];
    if (p->w[v].len[i] || !isfinite(w) || !isfinite(g) || !(t > 0))
      return;
    r = fmin(r, fabs((double)g - w) / t);
  }
  if (r > worst[p->s.kind][b])
    worst[p->s.kind][b] = r;
}

void fz_print_worst(void) {
  for (int k = 1; k < FZ_KIND_COUNT; k++)
    if (worst[k][0] > 0 || worst[k][1] > 0)
      printf("worst error/bound %-13s webgpu %.3g, cpu %.3g\n", fz_kind_name(k),
             worst[k][0], worst[k][1]);
}

/* Compares backend b's downloads with the reference and the guards;
 * false with its first mismatch. */
/* Output element i of backend b's download, decoded from C's type. */
static float got_output(const fz_pending *p, float *got[][2], int b, size_t i) {
  const uint8_t *x = (const uint8_t *)got[p->oa[i]][b];
  if (p->otype == WGC_DTYPE_F16 || p->otype == WGC_DTYPE_BF16)
    return dref_float(dref_load(x, p->otype, p->opos[i]));
  return got[p->oa[i]][b][p->opos[i]];
}

/* fz_close for an output rounded to a 2-byte type: it overflows to
 * infinity at that type's threshold rather than float32's. */
static bool close_typed(const fz_pending *p, float g, double want, double tol,
                        int len) {
  if (isinf(g) && isfinite(want) && len != FZ_LENIENT &&
      (p->otype == WGC_DTYPE_F16 || p->otype == WGC_DTYPE_BF16)) {
    double ovf = p->otype == WGC_DTYPE_F16 ? 65520.0 : 0x1.ffp127;
    return (g > 0) == (want > 0) && fabs(want) + tol >= ovf;
  }
  return fz_close(g, want, tol, len);
}

/* Compares backend b's downloads with the reference and the guards;
 * false with its first mismatch. */
static bool check_backend(const fz_pending *p, float *got[][2], int b,
                          char *msg, size_t size) {
  bool ok = true;
  /* Outputs first: they say more than a guard does. */
  for (size_t i = 0; i < p->nout && ok; i++) {
    if (p->al[p->oa[i]].freed)
      continue;
    float g = got_output(p, got, b, i);
    bool pass;
    if (p->bits)
      pass = !memcmp(&g, &p->bits[i], sizeof g);
    else
      pass = close_typed(p, g, p->w[0].v[i], p->w[0].tol[i], p->w[0].len[i]) ||
             close_typed(p, g, p->w[1].v[i], p->w[1].tol[i], p->w[1].len[i]);
    if (pass && !p->bits)
      note_ratio(p, b, g, i);
    if (!pass) {
      char gs[64], extra[300];
      hexf(gs, sizeof gs, g);
      describe(p, i, extra, sizeof extra);
      if (p->bits) {
        char ws[64];
        hexf(ws, sizeof ws, p->bits[i]);
        snprintf(msg, size, "%s: output[%zu] = %s, want %s", fz_backend[b], i,
                 gs, ws);
      } else if (p->w[0].v[i] != p->w[1].v[i] &&
                 !(isnan(p->w[0].v[i]) && isnan(p->w[1].v[i])))
        snprintf(msg, size,
                 "%s: output[%zu] = %s, want %.9g (bound %.3g) or, subnormal "
                 "inputs flushed, %.9g%s",
                 fz_backend[b], i, gs, p->w[0].v[i], p->w[0].tol[i],
                 p->w[1].v[i], extra);
      else
        snprintf(msg, size, "%s: output[%zu] = %s, want %.9g (bound %.3g)%s",
                 fz_backend[b], i, gs, p->w[0].v[i], p->w[0].tol[i], extra);
      ok = false;
    }
  }
  /* Guards byte by byte: a 2-byte output shares its word with a guard. */
  size_t ow = p->otype == WGC_DTYPE_F16 || p->otype == WGC_DTYPE_BF16 ? 2 : 4;
  for (int a = 0; a < p->nalloc && ok; a++) {
    if (p->al[a].freed)
      continue;
    uint8_t *out = zalloc(p->al[a].n * 4);
    for (size_t i = 0; i < p->nout; i++)
      if (p->oa[i] == a)
        memset(out + p->opos[i] * ow, 1, ow);
    const uint8_t *gb = (const uint8_t *)got[a][b],
                  *wb = (const uint8_t *)p->al[a].init;
    for (size_t i = 0; i < p->al[a].n * 4 && ok; i++)
      if (!out[i] && gb[i] != wb[i]) {
        char gs[64], ws[64];
        size_t el = i / 4;
        hexf(gs, sizeof gs, got[a][b][el]);
        hexf(ws, sizeof ws, p->al[a].init[el]);
        snprintf(msg, size,
                 "%s: element %zu of allocation %d (%zu elements; in %s) "
                 "changed from %s to %s",
                 fz_backend[b], el, a, p->al[a].n, owner(p, a, el), ws, gs);
        ok = false;
      }
    free(out);
  }
  return ok;
}

bool fz_check(fz_env *e, fz_pending *p, int how, fz_rng *r, char *msg,
              size_t size) {
  float *got[FZ_MAX_ALLOC][2] = {{NULL}};
  for (int a = 0; a < p->nalloc; a++)
    for (int b = 0; b < 2; b++)
      got[a][b] = zalloc(p->al[a].n * sizeof(float));
  bool ok = download_all(e, p, got, how, r, msg, size);
  bool lost = !ok && how != 0 && strstr(msg, "fired");
  if (ok) {
    /* Both backends' first mismatches: which one fails classifies a bug. */
    char bmsg[2][1024] = {"", ""};
    bool okb[2];
    for (int b = 0; b < 2; b++)
      okb[b] = check_backend(p, got, b, bmsg[b], sizeof bmsg[b]);
    if (!okb[0] && !okb[1])
      snprintf(msg, size, "%s; %s", bmsg[0], bmsg[1]);
    else if (!okb[0])
      snprintf(msg, size, "%s (cpu agrees with the reference)", bmsg[0]);
    else if (!okb[1])
      snprintf(msg, size, "%s (webgpu agrees with the reference)", bmsg[1]);
    ok = okb[0] && okb[1];
  }
  if (!lost)
    for (int a = 0; a < p->nalloc; a++)
      for (int b = 0; b < 2; b++)
        free(got[a][b]);
  release(e, p);
  return ok;
}

bool fz_run_alone(fz_env *e, const fz_step *s, char *msg, size_t size) {
  fz_pending *p = fz_issue(e, s, NULL, msg, size);
  if (!p)
    return false;
  return fz_check(e, p, 0, NULL, msg, size);
}
