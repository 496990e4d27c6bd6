# The browser module (included by the Makefile): the same C sources as the
# native library, compiled to wasm32-wasi with clang + lld + wasi-libc, with
# the GPU layer over navigator.gpu (src/gpu/gpu_browser.c + web/gpu.js), the
# wasm CPU pool (threads in a module linked with shared memory, in a
# cross-origin isolated page; src/cpu/pool_wasm.c) and the JS glue in
# src/browser/.
#   make wasm          build/web/{wgc.wasm, wgc.js, gpu.js, wgc.d.ts, demo,
#                      ops.js, ops.d.ts}
#   make serve         serve build/web on 127.0.0.1 (PORT=8080)
#   make test-browser  the browser tests in headless Chromium
# Toolchain: tools/bootstrap.sh browser (clang-19, lld-19, llvm-19's
# llvm-ar, wasi-libc, the wasm32 compiler-rt builtins of
# libclang-rt-19-dev-wasm32 for __multi3, and binaryen's wasm-opt from
# npm). Clang 19, not Debian's default 14, and binaryen 132, not Debian's
# 108: both of those predate relaxed SIMD's final opcodes.

WASM_CC      ?= clang-19
# binaryen's optimiser on the linked modules: wgc.wasm 144 -> 136 KB
# gzipped (its kernels' WGSL is embedded without comments, tools/embed.c).
# Links never pass -O: clang would run whatever wasm-opt is on the PATH.
WASM_OPT     ?= node web/node_modules/binaryen/bin/wasm-opt
WASM_OPT_FLAGS ?= -O2
# bulk memory: memcpy and memset become memory.copy and memory.fill, some
# ten times faster, so copies of many megabytes fit the CPU backend's
# slices (every browser since 2021 has them). SIMD128: the compiler
# vectorises the CPU backend's independent lanes (GEMM's register tile,
# element-wise loops) with the same IEEE operations, so results keep their
# bits; all-MiniLM-L6-v2 on the CPU backend in Chromium runs twice as fast
# (12 sentences 752 -> 376 ms). Chrome 91, Firefox 89, Safari 16.4, Node
# and Deno have it.
# Size first (-Oz: 18 KB less gzipped), except where the CPU backend
# spends a model's time (GEMM, attention, the norms): -O2 there, since it
# is the browser's fallback.
WASM_OPT_LEVEL ?= -Oz
WASM_CFLAGS  ?= $(WASM_OPT_LEVEL) -mbulk-memory -msimd128
# Relaxed SIMD (README, "Modules"): the register tile of GEMM and
# attention (src/cpu/tile.h) multiplies and adds in one relaxed_madd,
# fused where the machine has FMA; MiniLM's GEMMs 1.2x faster in V8.
# Chrome 114, Node 22 and Deno have it (Node 20 does not); each module is
# also built with it, and wgc.js picks that form where the engine validates it.
WASM_RELAXED_CFLAGS := -mrelaxed-simd
# the files that use the tile: the Makefile's TILE_SRC
WASM_RELAXED_SRC := $(TILE_SRC)
WASI_SYSROOT ?= /usr
WASM_TARGET  := --target=wasm32-wasi
WASM_CPPFLAGS := -D_GNU_SOURCE -isystem $(WASI_SYSROOT)/include/wasm32-wasi \
                 -Iinclude -Isrc -I$(B)/gen
# clang names the builtins archive even when it is not installed: check.
WASM_BUILTINS := $(shell $(WASM_CC) $(WASM_TARGET) -print-libgcc-file-name 2>/dev/null)
WASM_LDFLAGS := $(WASM_TARGET) -mexec-model=reactor -nodefaultlibs \
                -L$(WASI_SYSROOT)/lib/wasm32-wasi \
                -Wl,--export-dynamic -Wl,--export=malloc -Wl,--export=free \
                -Wl,--export-table -Wl,-z,stack-size=1048576 -Wl,--strip-debug
WASM_LIBS    := -lc -lm $(WASM_BUILTINS)
# Each module is also linked with threads (README, "Threads in the
# browser"; wgc-threads.wasm, minilm-threads.wasm): shared memory, imported
# so that web/wgc.js's workers share it, and the stack pointer exported so
# that each worker gets a stack of its own. Debian's wasi-libc is built
# without atomics, so the linker's feature check would refuse shared
# memory; its code only ever runs on the page's thread (workers run the
# CPU backend's tasks, which call no libc that keeps state), hence
# --no-check-features. 2 GiB at most, as a page on a 32-bit browser can
# still reserve. THREADS_LINK and THREADS_OPT hold the threaded form's
# flags in the rules that make both.
WASM_THREADS_LDFLAGS := -Wl,--no-check-features -Wl,--shared-memory \
                        -Wl,--import-memory -Wl,--max-memory=2147483648 \
                        -Wl,--export=__stack_pointer
THREADED := $(addprefix $(B)/web/,wgc-threads.wasm wgc-threads-relaxed.wasm minilm-threads.wasm \
              minilm-threads-relaxed.wasm)
$(THREADED): THREADS_LINK := $(WASM_THREADS_LDFLAGS)
$(THREADED): THREADS_OPT := --enable-threads

WASM_SRC := $(CORE_SRC) src/cpu/pool_wasm.c src/cpu/defer_queue.c src/gpu/gpu_browser.c src/gpu/gpu_errors.c \
            $(wildcard src/browser/*.c)
WASM_OBJ := $(WASM_SRC:%.c=$(B)/wasm/%.o) $(B)/wasm/gen/kernels.o
WASM_RELAXED_OBJ := $(filter-out $(WASM_RELAXED_SRC:%.c=$(B)/wasm/%.o),$(WASM_OBJ)) \
                    $(WASM_RELAXED_SRC:%.c=$(B)/wasm-relaxed/%.o)
WEB_FILES := $(wildcard web/*.js web/*.html web/*.d.ts)
PORT ?= 8080

$(B)/wasm/gen/kernels.o: $(B)/gen/kernels.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_TARGET) $(WASM_CPPFLAGS) $(WFLAGS) $(WASM_CFLAGS) $(DEPFLAGS) -fvisibility=hidden -c -o $@ $<
$(addprefix $(B)/wasm/src/cpu/,gemm.o attention.o norm.o): WASM_OPT_LEVEL := -O2
# Atomics only where the workers meet: an object built with them keeps its
# thread-locals as such, which wasm-ld 14 supports only with Emscripten.
$(B)/wasm/src/cpu/pool_wasm.o: WASM_CFLAGS += -matomics
$(B)/wasm/%.o: %.c $(B)/wasm/%.d
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_TARGET) $(WASM_CPPFLAGS) $(WFLAGS) $(WASM_CFLAGS) $(DEPFLAGS) -fvisibility=hidden -c -o $@ $<
$(WASM_RELAXED_SRC:%.c=$(B)/wasm-relaxed/%.o): WASM_OPT_LEVEL := -O2
$(WASM_RELAXED_SRC:%.c=$(B)/wasm-relaxed/%.o): WASM_CFLAGS += $(WASM_RELAXED_CFLAGS)
$(B)/wasm-relaxed/%.o: %.c $(B)/wasm-relaxed/%.d
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_TARGET) $(WASM_CPPFLAGS) $(WFLAGS) $(WASM_CFLAGS) $(DEPFLAGS) -fvisibility=hidden -c -o $@ $<

# Links the module $@ from the objects and archives $(1) (a threaded form
# with THREADS_LINK), then shrinks it with wasm-opt.
define link_module
	@mkdir -p $(@D)
	@test -f "$(WASM_BUILTINS)" || { echo "wasm32 compiler-rt builtins missing ($(WASM_BUILTINS)): run tools/bootstrap.sh browser (Debian package libclang-rt-19-dev-wasm32)" >&2; exit 1; }
	@$(WASM_OPT) --version >/dev/null 2>&1 || { echo "$(WASM_OPT) does not run: run tools/bootstrap.sh browser (binaryen from npm)" >&2; exit 1; }
	$(WASM_CC) $(WASM_LDFLAGS) $(THREADS_LINK) -o $@.linked $(1) $(WASM_LIBS)
	$(WASM_OPT) $(WASM_OPT_FLAGS) $(THREADS_OPT) $@.linked -o $@ && rm -f $@.linked
endef

# wgc.wasm, and the forms wgc.js loads instead where the page runs them:
# wgc-threads.wasm in a cross-origin isolated page, wgc-relaxed.wasm where
# the browser has relaxed SIMD, wgc-threads-relaxed.wasm where both hold.
# wgc's own forms shrink for size (binaryen's -Oz: 0.5 KB less gzipped
# than -O2); the application modules keep -O2.
$(addprefix $(B)/web/,wgc.wasm wgc-threads.wasm wgc-relaxed.wasm wgc-threads-relaxed.wasm): \
  WASM_OPT_FLAGS := -Oz
$(B)/web/wgc.wasm $(B)/web/wgc-threads.wasm: $(WASM_OBJ)
	$(call link_module,$(WASM_OBJ))
$(B)/web/wgc-relaxed.wasm $(B)/web/wgc-threads-relaxed.wasm: $(WASM_RELAXED_OBJ)
	$(call link_module,$(WASM_RELAXED_OBJ))

$(B)/web/.copied: $(WEB_FILES)
	@mkdir -p $(@D)
	cp $(WEB_FILES) $(B)/web/
	@touch $@

# The op constants that wgc.js and wgc.d.ts re-export, generated from
# wgc.h's op lists by a host program (as tools/embed.c for the kernels).
$(B)/jsops: tools/jsops.c tools/op_lists.h include/wgc.h
	@mkdir -p $(@D)
	$(CC) -O1 -Wall -Wextra -Werror -std=c11 -Iinclude -o $@ $<

$(B)/web/ops.js: $(B)/jsops
	@mkdir -p $(@D)
	$(B)/jsops $@ $(B)/web/ops.d.ts
$(B)/web/ops.d.ts: $(B)/web/ops.js

# C programs in the browser (README): wgc as a wasm32 static library and
# its header, which an application links into one module of its own; the
# application is linked as wgc.wasm is (a reactor exporting what wgc.js
# calls), and wgc.js's instantiate() loads it.
# libwgc-relaxed.a is the library of wgc-relaxed.wasm.
WASM_AR      ?= llvm-ar-19
WASM_LIB     := $(B)/web/lib/libwgc.a
WASM_RELAXED_LIB := $(B)/web/lib/libwgc-relaxed.a
WASM_APP_LDFLAGS := $(WASM_LDFLAGS)
WASM_APP_LIBS    := $(WASM_LIB) $(WASM_LIBS)
$(WASM_LIB): $(WASM_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(WASM_AR) rcs $@ $^
$(WASM_RELAXED_LIB): $(WASM_RELAXED_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(WASM_AR) rcs $@ $^
$(B)/web/include/wgc.h: include/wgc.h
	@mkdir -p $(@D)
	cp $< $@

# The smallest such application (examples/hello_gemm.c), built as a user
# would: from the installed header and library only.
$(B)/web/hello_gemm.wasm: examples/hello_gemm.c $(WASM_LIB) $(B)/web/include/wgc.h
	$(WASM_CC) $(WASM_TARGET) -isystem $(WASI_SYSROOT)/include/wasm32-wasi -I$(B)/web/include \
	  $(WFLAGS) -O2 $(WASM_APP_LDFLAGS) -o $@ $< $(WASM_APP_LIBS)

# all-MiniLM-L6-v2 as a browser application: the model's C files, the
# same as build/minilm's, with examples/minilm/browser/minilm_app.c's
# exports, linked with libwgc.a, or libwgc-relaxed.a for the relaxed forms
# (web/minilm.js drives it).
MINILM_APP_SRC := examples/minilm/browser/minilm_app.c $(MINILM_LIB_SRC) $(COMMON_SRC)
MINILM_APP_OBJ := $(MINILM_APP_SRC:%.c=$(B)/wasm-app/%.o)
$(B)/wasm-app/%.o: %.c $(B)/wasm-app/%.d $(B)/gen/unicode_tables.h $(B)/web/include/wgc.h
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_TARGET) -isystem $(WASI_SYSROOT)/include/wasm32-wasi -I$(B)/web/include \
	  $(EXAMPLE_INC) -I$(B)/gen -D_GNU_SOURCE $(WFLAGS) -O2 $(DEPFLAGS) -c -o $@ $<
$(B)/web/minilm.wasm $(B)/web/minilm-threads.wasm: $(MINILM_APP_OBJ) $(WASM_LIB)
	$(call link_module,$(MINILM_APP_OBJ) $(WASM_LIB))
$(B)/web/minilm-relaxed.wasm $(B)/web/minilm-threads-relaxed.wasm: $(MINILM_APP_OBJ) $(WASM_RELAXED_LIB)
	$(call link_module,$(MINILM_APP_OBJ) $(WASM_RELAXED_LIB))

wasm: $(addprefix $(B)/web/,wgc.wasm wgc-threads.wasm wgc-relaxed.wasm wgc-threads-relaxed.wasm) \
      $(B)/web/.copied $(B)/web/ops.js $(B)/web/ops.d.ts $(WASM_LIB) $(WASM_RELAXED_LIB) \
      $(B)/web/include/wgc.h $(B)/web/hello_gemm.wasm \
      $(addprefix $(B)/web/,minilm.wasm minilm-threads.wasm minilm-relaxed.wasm minilm-threads-relaxed.wasm)

# The npm package: build/wgc-<version>.tgz (tools/npm_pack.mjs), and its
# tests on every host it promises (tests/npm/run.mjs).
npm: wasm
	@node tools/npm_pack.mjs $(B)/web $(B)
test-npm: npm
	node tests/npm/run.mjs $(abspath $(B))/wgc-$(VERSION).tgz
print-version:
	@echo $(VERSION)

# the demo at /, the browser tests at /tests/test.html
serve: wasm
	node tools/serve.mjs $(B)/web $(PORT) /tests/=tests/browser /model/=third_party/minilm

test-browser: wasm
	node tests/browser/run.mjs

# wgc.js against TF.js (WebGPU backend) and a raw navigator.gpu loop, and
# all-MiniLM-L6-v2 against transformers.js and onnxruntime-web, in
# headless Chromium: build/bench/bench-web.json and bench-web.png.
bench-web:
	@tools/bootstrap.sh bench-web
	@$(MAKE) --no-print-directory wasm $(MINILM_ONNX)
	node bench/web/run.mjs
	$(PYTHON3) bench/chart.py $(B)/bench/bench-web.json $(B)/bench/bench-web.png
