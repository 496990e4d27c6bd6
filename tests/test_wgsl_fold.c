/* Constant if folding of generated WGSL (src/webgpu/wgsl_fold.c): every
 * form it folds, every form it must leave as it is, and the real
 * gemm_rv.wgsl with a block size's prelude (the kernels that run it are
 * the GEMM tests'). */
#include "harness.h"
#include "webgpu/kernels.h"
#include "webgpu/wgsl_fold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* src folded, in a buffer of its own (freed by the caller). */
static char *fold(const char *src) {
  size_t n = strlen(src);
  char *out = malloc(n + 1);
  if (!out)
    return NULL;
  size_t m = wg_wgsl_fold(src, n, out);
  CHECK(m <= n && out[m] == 0 && strlen(out) == m, "length %zu of %zu", m, n);
  return out;
}

static void expect(const char *name, const char *src, const char *want) {
  if (!case_begin("wgsl_fold %s", name))
    return;
  char *got = fold(src);
  CHECK(got && !strcmp(got, want), "got\n%s\nwant\n%s", got ? got : "(null)",
        want);
  free(got);
  case_end();
}

#define PRE "const TM: u32 = 4u; const TV: u32 = 2u; const A4 = true;\n"

TEST(wgsl_fold) {
  expect("true block keeps its braces",
         PRE "fn f() {\nif (TM > 2u) {\nlet x = 1u;\n}\n}\n",
         PRE "fn f() {\n{\nlet x = 1u;\n}\n}\n");
  expect("false block goes",
         PRE "fn f() {\nif (TM > 4u && TV > 1u) {\nx();\n}\ny();\n}\n",
         PRE "fn f() {\ny();\n}\n");
  expect("else taken", PRE "if (!A4) {\na();\n} else {\nb();\n}\nc();\n",
         PRE "{\nb();\n}\nc();\n");
  expect("else not taken",
         PRE "if (A4 || TM == 1u) {\na();\n} else {\nb();\n}\n",
         PRE "{\na();\n}\n");
  expect("else if chain, middle branch",
         PRE
         "if (TM < 4u) {\na();\n} else if (TM == 4u && (TV >= 2u)) {\nb();\n} "
         "else {\nc();\n}\nd();\n",
         PRE "{\nb();\n}\nd();\n");
  expect("else if chain, none taken",
         PRE "if (TM < 4u) {\na();\n} else if (TV != 2u) {\nb();\n}\nd();\n",
         PRE "d();\n");
  expect("nested, inner folded in the kept block",
         PRE "if (A4) {\nif (TV > 2u) {\na();\n}\nif (true) {\nb();\n}\n}\n",
         PRE "{\n{\nb();\n}\n}\n");
  expect("indented lines",
         PRE "  if (TM > 1u) {\n    a();\n  } else {\n    b();\n  }\n",
         PRE "{\n    a();\n}\n");
  expect("a folded block inside one left alone",
         PRE "if (n > 2u) {\nif (TM > 8u) {\na();\n}\nb();\n}\n",
         PRE "if (n > 2u) {\nb();\n}\n");
  /* left as they are */
  const char *kept[][2] = {
      {"unknown name", PRE "if (TM > n) {\na();\n}\n"},
      {"a call", PRE "if (f(TM)) {\na();\n}\n"},
      {"a float", PRE "if (TM > 1.0f) {\na();\n}\n"},
      {"an integer condition", PRE "if (TM) {\na();\n}\n"},
      {"bool ordered", PRE "if (A4 < true) {\na();\n}\n"},
      {"one line", PRE "if (TM > 1u) { a(); }\n"},
      {"unknown else if",
       PRE "if (TM > 9u) {\na();\n} else if (n > 1u) {\nb();\n}\n"},
      {"closing brace not first", PRE "if (TM > 1u) {\na(); }\nb();\n"},
      {"unbalanced", PRE "if (TM > 1u) {\na();\n"},
      {"odd else", PRE "if (TM > 1u) {\na();\n} else x {\nb();\n}\n"},
      {"shadowed by let",
       PRE "fn f() { let TM = 9u; }\nif (TM > 1u) {\na();\n}\n"},
      {"shadowed by a parameter",
       PRE "fn f(TV: u32) {\nif (TV > 1u) {\na();\n}\n}\n"},
      {"declared twice", PRE "const TM: u32 = 4u;\nif (TM > 1u) {\na();\n}\n"},
      {"not a literal", "const TM: u32 = 2u * 2u;\nif (TM > 1u) {\na();\n}\n"},
      {"negative literal", "const TM: i32 = -1i;\nif (TM > 1i) {\na();\n}\n"},
      {"a huge literal",
       "const TM: u32 = 99999999999999999999u;\nif (TM > 1u) {\na();\n}\n"},
      {"trailing operator", PRE "if (TM > 1u &&) {\na();\n}\n"},
      {"one &", PRE "if (A4 & A4) {\na();\n}\n"},
      {"unclosed paren", PRE "if ((TM > 1u) {\na();\n}\n"},
  };
  for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
    expect(kept[i][0], kept[i][1], kept[i][1]);

  /* the kernel that motivates it: a 1 x 2 block keeps a sliver of the 16 x 4
   * written out */
  if (case_begin("wgsl_fold gemm_rv.wgsl, TM 1, TV 2")) {
    const wgc_kernel_source *k = wgc_kernel_find("gemm_rv");
    CHECK(k, "gemm_rv missing");
    if (k) {
      const char *pre =
          "const BM: u32 = 1u; const BN: u32 = 64u; const TM: u32 "
          "= 1u; const TV: u32 = 2u; const A4 = true; const B4 = "
          "true; const BK = false;\n";
      size_t n = strlen(pre) + k->length;
      char *src = malloc(n + 1), *out = malloc(n + 1);
      if (src && out) {
        memcpy(src, pre, strlen(pre));
        memcpy(src + strlen(pre), k->text, k->length);
        src[n] = 0;
        size_t m = wg_wgsl_fold(src, n, out);
        case_note(" (%zu -> %zu bytes)", n, m);
        CHECK(m < n / 3, "folded to %zu of %zu bytes", m, n);
        CHECK(strstr(out, "acc0_1 = fma") && !strstr(out, "acc1_0 = fma") &&
                  !strstr(out, "if (TM >") && !strstr(out, "if (TV >"),
              "blocks beyond 1 x 2 remain, or row 0's went");
      }
      free(src);
      free(out);
    }
    case_end();
  }
}
