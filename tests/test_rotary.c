/* RotaryEmbedding against a float64 loop of ONNX's formula (opset 23) on
 * both backends: both pairings, partial rotary_dim, both layouts, with and
 * without position ids (ids outside the cache included), in place, and
 * rejected arguments. */
#include "ops_ref.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3

static float int_bits(int32_t v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
typedef struct rot_case {
  wgc_rotary_desc d;
  bool pos, out_of_range, in_place;
} rot_case;

/* Runs rc on backend bi, or on small (a context with small bindings) when
 * it is not NULL. */
/* small: NULL for the shared contexts of backend bi, else a context under
 * 4 KiB bindings, created by the first such case the filter lets run (a run
 * of other cases, the CPU-only one under valgrind, starts no adapter). */
static void run_case(int bi, const rot_case *rc, wgc_context **small) {
  const wgc_rotary_desc *d = &rc->d;
  size_t rd = d->rotary_dim ? d->rotary_dim : d->head_dim, half = rd / 2;
  size_t n = d->batch * d->seq * d->heads * d->head_dim;
  size_t pairs = d->batch * d->seq;
  size_t crow = rc->pos ? d->max_positions : pairs;
  wgc_context *ctx = NULL;
  char desc[160];
  snprintf(desc, sizeof desc, "b=%zu s=%zu h=%zu hd=%zu rd=%zu %s %s%s%s%s",
           d->batch, d->seq, d->heads, d->head_dim, rd,
           d->layout == WGC_ROTARY_BSHD ? "BSHD" : "BHSD",
           d->interleaved ? "interleaved" : "halves",
           rc->pos ? " position_ids" : "",
           rc->out_of_range ? " (some out of range)" : "",
           rc->in_place ? " in-place" : "");
  if (small ? !case_begin("rotary %s [webgpu, 4096 B bindings]", desc)
            : !backend_case(bi, &ctx, "rotary %s", desc))
    return;
  if (small && !*small)
    *small = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (small && !(ctx = *small)) {
    case_end();
    return;
  }
  float *x = falloc(n), *cosc = falloc(crow * half),
        *sinc = falloc(crow * half);
  fill_uniform(x, n, -3, 3, 11);
  for (size_t p = 0; p < crow; p++)
    for (size_t k = 0; k < half; k++) {
      double theta = (double)p * pow(10000.0, -2.0 * (double)k / (double)rd);
      cosc[p * half + k] = (float)cos(theta);
      sinc[p * half + k] = (float)sin(theta);
    }
  int32_t *pos = NULL;
  float *posf = NULL;
  if (rc->pos) {
    pos = xmalloc(pairs * sizeof *pos);
    posf = falloc(pairs);
    for (size_t j = 0; j < pairs; j++) {
      pos[j] = (int32_t)((j * 7 + 3) % d->max_positions);
      if (rc->out_of_range && j % 4 == 1)
        pos[j] = j % 8 == 1 ? -1 - (int32_t)j : (int32_t)d->max_positions + 2;
      posf[j] = int_bits(pos[j]);
    }
  }
  size_t total = n + 2 * GUARD;
  float *y = falloc(total), *got = falloc(total);
  for (size_t i = 0; i < total; i++)
    y[i] = sentinel();
  if (rc->in_place)
    memcpy(y + GUARD, x, n * sizeof *x);
  wgc_ptr dy = dev_from(ctx, y, total);
  wgc_ptr dx = rc->in_place ? at(dy, GUARD) : dev_from(ctx, x, n);
  wgc_ptr dc = dev_from(ctx, cosc, crow * half);
  wgc_ptr ds = dev_from(ctx, sinc, crow * half);
  wgc_ptr dp = rc->pos ? dev_from(ctx, posf, pairs) : 0;
  if (dy && dx && dc && ds && (!rc->pos || dp)) {
    CHECK_OK(ctx, wgc_rotary_embedding(ctx, d, dx, dp, dc, ds, at(dy, GUARD)));
    if (dev_read(ctx, got, dy, total)) {
      double *want = dalloc(n), *tol = dalloc(n);
      double *xd = dalloc(n), *cd = dalloc(crow * half),
             *sd = dalloc(crow * half);
      for (size_t i = 0; i < n; i++)
        xd[i] = x[i];
      for (size_t i = 0; i < crow * half; i++)
        cd[i] = cosc[i], sd[i] = sinc[i];
      ref_rotary(d, xd, pos, cd, sd, want, tol);
      free(xd), free(cd), free(sd);
      char key[32];
      snprintf(key, sizeof key, "rotary[%s]", backend_label(test_backends[bi]));
      check_close_at(__FILE__, __LINE__, key, NULL, got + GUARD, want, n, 0, 0,
                     tol);
      double eabs = 0;
      for (size_t i = 0; i < n; i++)
        eabs = fmax(eabs, fabs(got[GUARD + i] - want[i]));
      case_note(" abs %.2g", eabs);
      for (size_t g = 0; g < GUARD; g++)
        CHECK(same_bits(got[g], y[g]) &&
                  same_bits(got[total - 1 - g], y[total - 1 - g]),
              "a guard element changed");
      free(want);
      free(tol);
    }
  }
  if (!rc->in_place)
    dev_free(ctx, dx);
  dev_free(ctx, dy);
  dev_free(ctx, dc);
  dev_free(ctx, ds);
  dev_free(ctx, dp);
  free(x);
  free(cosc);
  free(sinc);
  free(pos);
  free(posf);
  free(y);
  free(got);
  case_end();
}

TEST(rotary_embedding) {
  static const struct {
    size_t b, s, h, hd, rd, maxpos;
  } shapes[] = {
      {1, 1, 1, 2, 0, 1},    {2, 5, 3, 10, 6, 9},     {3, 7, 2, 16, 0, 40},
      {1, 13, 5, 12, 4, 13}, {1, 64, 8, 64, 32, 128},
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int variant = 0; variant < 8; variant++) {
      rot_case rc = {
          .d = {.batch = shapes[si].b,
                .seq = shapes[si].s,
                .heads = shapes[si].h,
                .head_dim = shapes[si].hd,
                .rotary_dim = shapes[si].rd,
                .interleaved = variant & 1,
                .layout = variant & 2 ? WGC_ROTARY_BHSD : WGC_ROTARY_BSHD,
                .max_positions = shapes[si].maxpos},
          .pos = variant & 4,
          .out_of_range = (variant & 4) && si % 2 == 1,
          .in_place = variant == 3 || variant == 6};
      for (int bi = 0; bi < 2; bi++)
        run_case(bi, &rc, NULL);
    }
}

TEST(rotary_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "rotary invalid arguments"))
      continue;
    const char *F = "wgc_rotary_embedding";
    float h[256];
    fill_ramp(h, 256, 1);
    wgc_ptr x = dev_from(ctx, h, 256), y = dev_from(ctx, h, 256);
    wgc_ptr c = dev_from(ctx, h, 256), p = dev_from(ctx, h, 256);
    /* 2 * 3 * 2 rows of 8; caches [4, 3] */
    wgc_rotary_desc d = {.batch = 2,
                         .seq = 3,
                         .heads = 2,
                         .head_dim = 8,
                         .rotary_dim = 6,
                         .max_positions = 4};
    if (x && y && c && p) {
      CHECK_OK(ctx, wgc_rotary_embedding(ctx, &d, x, 0, c, c, y));
      /* max_positions is ignored without position ids */
      wgc_rotary_desc any = d;
      any.max_positions = SIZE_MAX;
      CHECK_OK(ctx, wgc_rotary_embedding(ctx, &any, x, 0, c, c, y));
      CHECK_OK(ctx, wgc_rotary_embedding(ctx, &d, x, p, c, c, x));
      CHECK_DEVICE_EQUALS(ctx, p, h, 256, "position_ids");
      CHECK_DEVICE_EQUALS(ctx, c, h, 256, "caches");
      float hy[256];
      CHECK(dev_read(ctx, hy, y, 256), "read y");
      CHECK_REJECTED(NULL, wgc_rotary_embedding(NULL, &d, x, p, c, c, y), F,
                     "ctx");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, NULL, x, p, c, c, y), F,
                     "d");
      wgc_rotary_desc bad = d;
      bad.rotary_dim = 5;
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "d->rotary_dim");
      CHECK_ERROR_VALUE(ctx, "5");
      bad.rotary_dim = 10;
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "d->rotary_dim");
      bad = d;
      bad.rotary_dim = 0;
      bad.head_dim = 7; /* rotary_dim defaults to an odd head_dim */
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "d->rotary_dim");
      bad = d;
      bad.layout = (wgc_rotary_layout)7;
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "d->layout");
      bad = d;
      bad.max_positions = 0;
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "d->max_positions");
      bad.max_positions = 100; /* caches of 300 floats */
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "cos_cache");
      bad = d;
      bad.seq = 30; /* input of 960 floats */
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y), F,
                     "input");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, at(p, 252), c, c, y),
                     F, "position_ids");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, p, c, at(c, 250), y),
                     F, "sin_cache");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, p, c, c, at(x, 1)),
                     F, "output|input");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, p, c, c, c), F,
                     "output|cos_cache|sin_cache");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, p, c, c, p), F,
                     "output|position_ids");
      CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x + 2, p, c, c, y), F,
                     "input");
      CHECK_DEVICE_EQUALS(ctx, y, hy, 256, "output");
      bad = d;
      bad.heads = 0; /* nothing to do */
      CHECK_OK(ctx, wgc_rotary_embedding(ctx, &bad, x, p, c, c, y));
      CHECK_DEVICE_EQUALS(ctx, y, hy, 256, "output");
    }
    dev_free(ctx, x);
    dev_free(ctx, y);
    dev_free(ctx, c);
    dev_free(ctx, p);
    case_end();
  }
}

/* Pieces of the CPU work (cpu/split.h) give the whole call's result. */
TEST(rotary_cpu_split) {
  if (!case_begin("rotary_split[cpu] b=2 s=9 h=3 hd=20 rd=12 position_ids"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  wgc_rotary_desc d = {.batch = 2,
                       .seq = 9,
                       .heads = 3,
                       .head_dim = 20,
                       .rotary_dim = 12,
                       .layout = WGC_ROTARY_BHSD,
                       .max_positions = 16};
  size_t n = 2 * 9 * 3 * 20;
  float *x = falloc(n), *whole = falloc(n), *part = falloc(n);
  float *c = falloc(16 * 6), *s = falloc(16 * 6);
  int32_t pos[18];
  for (int i = 0; i < 18; i++)
    pos[i] = (i * 5) % 19 - 1; /* -1 and 16..17 are out of range */
  fill_uniform(x, n, -1, 1, 3);
  fill_uniform(c, 96, -1, 1, 4);
  fill_uniform(s, 96, -1, 1, 5);
  cpu_work w = {.kind = CPU_WORK_ROTARY};
  w.u.rotary = (wgc_rotary_args){.d = d,
                                 .has_position_ids = true,
                                 .input = {.mem = x},
                                 .position_ids = {.mem = pos},
                                 .cos_cache = {.mem = c},
                                 .sin_cache = {.mem = s},
                                 .output = {.mem = whole},
                                 .fn = "test"};
  CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
  w.u.rotary.output = (wgc_ref){.mem = part};
  cpu_split sp;
  CHECK_STATUS(cpu_split_plan(&w, 100, &sp), WGC_OK);
  CHECK(sp.pieces > 10, "only %zu pieces", sp.pieces);
  for (size_t i = 0; i < sp.pieces; i++)
    CHECK_STATUS(cpu_split_run(ctx, &w, &sp, i), WGC_OK);
  cpu_split_release(&sp);
  CHECK(!memcmp(part, whole, n * sizeof *part), "pieces differ");
  free(x), free(whole), free(part), free(c), free(s);
  case_end();
}

/* Under 4 KiB bindings (960 floats): caches of 4000 floats and 1120
 * gathered ones, rows whose cache rows span several windows. */
TEST(rotary_small_bindings) {
  wgc_context *small = NULL;
  for (int variant = 0; variant < 4; variant++) {
    rot_case rc = {
        .d = {.batch = 2,
              .seq = 70,
              .heads = 3,
              .head_dim = 20,
              .rotary_dim = 16,
              .interleaved = variant & 1,
              .layout = variant & 2 ? WGC_ROTARY_BHSD : WGC_ROTARY_BSHD,
              .max_positions = 500},
        .pos = variant != 3,
        .out_of_range = variant != 3,
        .in_place = variant == 2};
    run_case(1, &rc, &small);
  }
  wgc_destroy(small);
}

/* Rows longer than a 4 KiB binding (head_dim 2048 against 960 floats):
 * each row is rotated in runs of pairs with its halves bound apart, the
 * gathered cache rows (1024 floats with rotary_dim 2048) by columns, and
 * the dimensions past rotary_dim copied; on the CPU backend as a check of
 * the reference. */
TEST(rotary_long_rows) {
  wgc_context *small = NULL;
  static const size_t rds[] = {0, 1000, 6};
  for (size_t ri = 0; ri < 3; ri++)
    for (int variant = 0; variant < 8; variant++) {
      rot_case rc = {
          .d = {.batch = 1,
                .seq = 3,
                .heads = 2,
                .head_dim = 2048,
                .rotary_dim = rds[ri],
                .interleaved = variant & 1,
                .layout = variant & 2 ? WGC_ROTARY_BHSD : WGC_ROTARY_BSHD,
                .max_positions = 5},
          .pos = variant & 4,
          .out_of_range = (variant & 4) && ri != 1,
          .in_place = variant == 3 || variant == 6};
      run_case(1, &rc, &small);
      if (variant == 5)
        run_case(0, &rc, NULL);
    }
  wgc_destroy(small);
}
