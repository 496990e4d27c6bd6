# wgc — build, test, install. `make help` lists the targets.
CC      ?= cc
CFLAGS  ?= -O2 -g
WFLAGS  := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
B       := build
CPPFLAGS_ALL := -D_GNU_SOURCE -Iinclude -Isrc -I$(B)/gen -Ithird_party/wgpu/include
PREFIX  ?= /usr/local
# Debian's, which has python3-matplotlib (the bench's chart)
PYTHON3 ?= /usr/bin/python3
WGPU_LIB := third_party/wgpu/lib/libwgpu_native.so
# The one version number, from include/wgc.h's WGC_VERSION_* lines.
VERSION := $(shell sed -n 's/^\#define WGC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' include/wgc.h | paste -sd.)

# Sources by layer: the front end, the CPU backend and the WebGPU backend are
# shared by the native and the browser builds; each build adds its own GPU
# layer, thread pool and deferral (web.mk).
FRONT_SRC  := $(wildcard src/*.c)
CPU_SRC    := $(filter-out src/cpu/pool_%.c src/cpu/defer_%.c,$(wildcard src/cpu/*.c))
WEBGPU_SRC := $(wildcard src/webgpu/*.c)
CORE_SRC   := $(FRONT_SRC) $(CPU_SRC) $(WEBGPU_SRC)
NATIVE_SRC := src/gpu/gpu_native.c src/gpu/gpu_errors.c $(wildcard src/gpu/native_*.c) \
              src/cpu/pool_threads.c src/cpu/defer_none.c
LIB_SRC    := $(CORE_SRC) $(NATIVE_SRC)
KERNELS    := $(sort $(wildcard kernels/*.wgsl))
LIB_OBJ    := $(LIB_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/kernels.o
PIC_OBJ    := $(LIB_SRC:%.c=$(B)/pic/%.o) $(B)/pic/gen/kernels.o
# The model examples' loaders (json, safetensors, wordpiece) are tested in
# the test binary.
COMMON_SRC := $(wildcard examples/common/*.c)
TEST_SRC   := $(wildcard tests/*.c) $(COMMON_SRC)
TEST_OBJ   := $(TEST_SRC:%.c=$(B)/test/%.o)
# The compiler writes each object's header dependencies next to it.
DEPFLAGS   := -MMD -MP
LIBS       := -ldl -lpthread -lm

.PHONY: all lib deps deps-browser deps-model demo-gpt test test-c python test-python check-layers npm test-npm print-version test-asan test-tsan soak test-browser fuzz demo bench bench-web bench-gpu-build install wasm serve format clean help
all: lib

help:
	@echo "make          build build/lib/libwgc.{a,so}"
	@echo "make test     install deps, run every test (C on both backends, sanitizers, browser)"
	@echo "make soak     the long soak and load runs (minutes)"
	@echo "make fuzz     differential fuzzing, fresh seeds for SECONDS (60); SEED=n replays one"
	@echo "make fuzz-parsers  the model loaders (JSON, safetensors, tokenizer) fuzzed under ASan"
	@echo "make demo     sentence embeddings (all-MiniLM-L6-v2) on WebGPU, checked against the CPU backend"
	@echo "make demo-gpt a small GPT decoder generating on WebGPU, checked against the CPU backend"
	@echo "make bench    benchmarks against every baseline, side by side (build/bench)"
	@echo "make bench-web  the same in headless Chromium: wgc.js, TF.js, raw WebGPU"
	@echo "make install PREFIX=dir"
	@echo "make python  the Python wheel in build/python (make test-python: its tests)"
	@echo "make wasm     build the browser module into build/web"
	@echo "make npm      the npm package, build/wgc-<version>.tgz (make test-npm: its tests)"
	@echo "make serve    serve the browser demo on 127.0.0.1"

deps:
	@tools/bootstrap.sh native
deps-browser:
	@tools/bootstrap.sh browser model
deps-model:
	@tools/bootstrap.sh model

$(WGPU_LIB):
	@tools/bootstrap.sh native

# A recipe that fails leaves no half-written target behind.
.DELETE_ON_ERROR:

lib: $(B)/lib/libwgc.a $(B)/lib/libwgc.so $(B)/lib/libwgpu_native.so

$(B)/embed: tools/embed.c include/wgc.h
	@mkdir -p $(@D)
	$(CC) -O1 -Wall -Wextra -Werror -std=c11 -Iinclude -o $@ $<

$(B)/gen/kernels.c: $(B)/embed $(KERNELS)
	@mkdir -p $(@D)
	$(B)/embed $@ $(KERNELS)

$(B)/obj/gen/kernels.o: $(B)/gen/kernels.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(B)/pic/gen/kernels.o: $(B)/gen/kernels.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) $(DEPFLAGS) -fPIC -c -o $@ $<

# The tokenizer's Unicode tables, from Python's unicodedata.
$(B)/gen/unicode_tables.h: tools/gen_unicode.py
	@mkdir -p $(@D)
	$(PYTHON3) tools/gen_unicode.py $@
$(foreach d,obj test asan tsan wasm,$(B)/$(d)/examples/common/unicode.o): $(B)/gen/unicode_tables.h

# The files that use the CPU backend's register tile: its FMA form
# (src/cpu/tile.h) contracts each multiply-add into one instruction.
TILE_SRC := src/cpu/gemm.c src/cpu/attention.c
$(foreach d,obj pic asan tsan,$(TILE_SRC:%.c=$(B)/$(d)/%.o)): TILE_CFLAGS := -ffp-contract=fast

# wgpu-native's headers must exist before anything compiles; its timestamp
# must not rebuild everything, hence order-only.
$(B)/obj/%.o: %.c $(B)/obj/%.d | $(WGPU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) $(TILE_CFLAGS) $(DEPFLAGS) -fvisibility=hidden -c -o $@ $<
$(B)/pic/%.o: %.c $(B)/pic/%.d | $(WGPU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) $(TILE_CFLAGS) $(DEPFLAGS) -fvisibility=hidden -fPIC -c -o $@ $<

$(B)/lib/libwgc.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
# $ORIGIN: the library loads libwgpu_native.so from its own folder.
$(B)/lib/libwgc.so: $(PIC_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libwgc.so -Wl,-rpath,'$$ORIGIN' -o $@ $^ $(LIBS)
$(B)/lib/libwgpu_native.so: $(WGPU_LIB)
	@mkdir -p $(@D)
	cp $< $@

# The MiniLM model (examples/minilm, all but its command line) is tested in
# the test binary; its loaders come from examples/common.
MINILM_LIB_SRC := $(filter-out examples/minilm/minilm.c,$(wildcard examples/minilm/*.c))
TEST_SRC       += $(MINILM_LIB_SRC)
TEST_OBJ       := $(TEST_SRC:%.c=$(B)/test/%.o)
EXAMPLE_INC    := -Iexamples/common -Iexamples/minilm
$(B)/test/%.o $(B)/asan/%.o $(B)/tsan/%.o: CPPFLAGS_ALL += $(EXAMPLE_INC)

# ---- tests ---------------------------------------------------------------
$(B)/test/%.o: %.c $(B)/test/%.d | $(WGPU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) $(DEPFLAGS) -Itests -c -o $@ $<
$(B)/test_wgc: $(TEST_OBJ) $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(B)/lib/libwgc.a -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

# The same sources (the tests and the native library), instrumented.
SAN_SRC   := $(TEST_SRC) $(LIB_SRC) $(B)/gen/kernels.c
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_OBJ  := $(SAN_SRC:%.c=$(B)/asan/%.o)
$(B)/asan/%.o: %.c $(B)/asan/%.d | $(WGPU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(SAN_FLAGS) $(TILE_CFLAGS) $(DEPFLAGS) -Itests -c -o $@ $<
$(B)/test_wgc_asan: $(ASAN_OBJ) $(B)/lib/libwgpu_native.so
	$(CC) $(SAN_FLAGS) -o $@ $(ASAN_OBJ) -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

# ThreadSanitizer, for the cases that run threads (tools/run_tests.sh).
TSAN_FLAGS := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
TSAN_OBJ   := $(SAN_SRC:%.c=$(B)/tsan/%.o)
$(B)/tsan/%.o: %.c $(B)/tsan/%.d | $(WGPU_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(TSAN_FLAGS) $(TILE_CFLAGS) $(DEPFLAGS) -Itests -c -o $@ $<
$(B)/test_wgc_tsan: $(TSAN_OBJ) $(B)/lib/libwgpu_native.so
	$(CC) $(TSAN_FLAGS) -o $@ $(TSAN_OBJ) -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

test: deps-browser
	@tools/run_tests.sh

test-c: lib $(B)/test_wgc
	$(B)/test_wgc $(FILTER)

# No two files of src/ depend on each other in a cycle (calls or includes).
check-layers:
	@python3 tools/check_layers.py src

test-tsan: $(B)/test_wgc_tsan
	WGC_WGPU_LIBRARY=$(abspath $(B)/lib/libwgpu_native.so) TSAN_OPTIONS="suppressions=$(abspath tools/tsan.supp) halt_on_error=1" $(B)/test_wgc_tsan $(FILTER)

# The long soak runs, one process per test so that one that hangs (the
# watchdog ends it) does not hide the others.
SOAK_TESTS := soak_create_destroy soak_alloc_free soak_upload_then_free soak_table_lifetime soak_chain_ops soak_outstanding_downloads soak_threads_contexts
soak: lib $(B)/test_wgc
	@fail=0; for t in $(SOAK_TESTS); do WGC_SOAK=1 $(B)/test_wgc $$t || fail=1; done; exit $$fail

test-asan: $(B)/test_wgc_asan
	WGC_WGPU_LIBRARY=$(abspath $(B)/lib/libwgpu_native.so) LSAN_OPTIONS=suppressions=$(abspath tools/lsan.supp) $(B)/test_wgc_asan $(FILTER)

# Differential fuzzing (tests/fuzz*.c): fresh random seeds for SECONDS, or
# one seed replayed with SEED=n; ends on "N passed, N failed".
SECONDS ?= 60
fuzz: lib $(B)/test_wgc
	FUZZ_SECONDS=$(SECONDS) FUZZ_SEED=$(SEED) FUZZ_STEPS=$(STEPS) $(B)/test_wgc child_fuzz_random

# The model loaders' fuzzer (tests/fuzz_parsers.c), built with ASan and
# UBSan so that a read past an input is caught: fresh seeds for SECONDS, or
# SEED=n replayed.
.PHONY: fuzz-parsers
fuzz-parsers: $(B)/test_wgc_asan
	LSAN_OPTIONS=suppressions=$(abspath tools/lsan.supp) FUZZ_SECONDS=$(SECONDS) FUZZ_SEED=$(SEED) $(B)/test_wgc_asan child_fuzz_parsers

# ---- demo, bench, examples -----------------------------------------------
# The decoder demo: examples/gpt.c and the model in examples/gpt_model.c.
GPT_SRC := examples/gpt.c examples/gpt_model.c
$(B)/gpt: $(GPT_SRC) examples/gpt_model.h $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) -o $@ $(GPT_SRC) $(B)/lib/libwgc.a -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

demo-gpt: deps
	@$(MAKE) --no-print-directory $(B)/gpt
	$(B)/gpt

# The sentence-embedding demo: all-MiniLM-L6-v2's real weights on WebGPU,
# checked against the CPU backend (examples/minilm).
MINILM_SRC := examples/minilm/minilm.c $(MINILM_LIB_SRC) $(COMMON_SRC)
$(B)/minilm: $(MINILM_SRC) $(wildcard examples/minilm/*.h examples/common/*.h) $(B)/gen/unicode_tables.h $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CPPFLAGS_ALL) $(EXAMPLE_INC) $(WFLAGS) $(CFLAGS) -o $@ $(MINILM_SRC) $(B)/lib/libwgc.a -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)
DEMO_SENTENCES := "A man is playing a guitar." "A man plays the guitar." \
  "The stock market fell sharply today." "Stock prices dropped steeply today." \
  "A cat sleeps on the windowsill." "A kitten is napping by the window."
demo: deps-model
	@$(MAKE) --no-print-directory $(B)/minilm
	$(B)/minilm --backend webgpu --repeat 3 --check $(DEMO_SENTENCES)

# The smallest program that also builds for the browser (web.mk).
$(B)/hello_gemm: examples/hello_gemm.c $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) -o $@ $< $(B)/lib/libwgc.a -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

# The baselines call wgpu-native directly (webgpu.h), beside libwgc; the
# decoder case runs the demo's model (examples/gpt_model.c).
BENCH_SRC := $(wildcard bench/*.c) examples/gpt_model.c
$(B)/bench_wgc: $(BENCH_SRC) $(wildcard bench/*.h) examples/gpt_model.h $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) -o $@ $(BENCH_SRC) $(B)/lib/libwgc.a \
	  -L$(B)/lib -lwgpu_native -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

# all-MiniLM-L6-v2 in ONNX for the bench's peers (bench/minilm), made from
# the same safetensors weights and checked against the reference.
BENCH_PY   := $(B)/bench-venv/bin/python
MINILM_ONNX := $(B)/bench/models/all-MiniLM-L6-v2/onnx/model.onnx
$(MINILM_ONNX): bench/minilm/export_onnx.py bench/minilm/requirements.txt third_party/minilm/model.safetensors tests/data/minilm_reference.txt
	$(BENCH_PY) bench/minilm/export_onnx.py $(B)/bench/models

# Table on stdout, build/bench/bench.json and bench.png; then MiniLM
# beside onnxruntime and PyTorch (build/bench/bench-minilm.json).
bench:
	@tools/bootstrap.sh native bench
	@$(MAKE) --no-print-directory $(B)/bench_wgc $(B)/minilm $(MINILM_ONNX)
	$(B)/bench_wgc
	$(PYTHON3) bench/chart.py $(B)/bench/bench.json $(B)/bench/bench.png
	$(BENCH_PY) bench/minilm/native_bench.py $(B)/minilm $(B)/bench/models $(B)/bench/bench-minilm.json

# The GPU machine's bench (bench/gpu.sh): one program beside the runtime.
$(B)/gpu_bench: bench/gpu/gpu_bench.c $(B)/lib/libwgc.a $(B)/lib/libwgpu_native.so
	$(CC) $(CPPFLAGS_ALL) $(WFLAGS) $(CFLAGS) -o $@ $< $(B)/lib/libwgc.a \
	  -Wl,-rpath,'$$ORIGIN/lib' $(LIBS)

bench-gpu-build: deps
	@$(MAKE) --no-print-directory $(B)/gpu_bench

# ---- Python package --------------------------------------------------------
# A wheel over libwgc.so and the pinned libwgpu_native.so (README.md, Python);
# its constants come from wgc.h through tools/pyops.c, its version from
# VERSION. Phony (python/ is a folder): the wheel is rewritten each time,
# byte for byte the same for the same inputs.
$(B)/pyops: tools/pyops.c tools/op_lists.h include/wgc.h
	@mkdir -p $(@D)
	$(CC) -O1 -Wall -Wextra -Werror -std=c11 -Iinclude -o $@ $<
$(B)/python/gen/_consts.py: $(B)/pyops
	@mkdir -p $(@D)
	$(B)/pyops $@

python: lib $(B)/python/gen/_consts.py
	@$(PYTHON3) tools/python_wheel.py $(VERSION) $(B)/python python/wgc \
	  $(B)/python/gen/_consts.py $(B)/lib/libwgc.so $(B)/lib/libwgpu_native.so

# Installs the wheel into a fresh virtual environment and runs pytest there;
# ends on "N passed, N failed".
test-python: python
	@tools/test_python.sh

# ---- install -------------------------------------------------------------
install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/wgc.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(B)/lib/libwgc.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/lib/libwgc.so $(B)/lib/libwgpu_native.so $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' tools/wgc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/wgc.pc

# Every folder with C sources; clang-format comes from
# `tools/bootstrap.sh format` (Debian package clang-format).
FORMAT_FILES := $(wildcard include/*.h src/*.[ch] src/*/*.[ch] tests/*.[ch] examples/*.c bench/*.[ch] bench/gpu/*.c tools/*.c)
FORMAT_FILES += $(wildcard examples/common/*.[ch] examples/minilm/*.[ch])
format:
	@command -v clang-format >/dev/null || { echo "clang-format missing: run tools/bootstrap.sh format" >&2; exit 1; }
	clang-format -i $(FORMAT_FILES)

clean:
	rm -rf $(B)

include web.mk

# An object without its dependency file (built before dependencies were
# generated, or interrupted) is rebuilt: a missing .d, an explicit target
# without a recipe, counts as new.
ALL_DEPS := $(patsubst %.o,%.d,$(LIB_OBJ) $(PIC_OBJ) $(TEST_OBJ) $(ASAN_OBJ) $(TSAN_OBJ) $(WASM_OBJ) \
                              $(WASM_RELAXED_OBJ) $(MINILM_APP_OBJ))
$(ALL_DEPS):
-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d $(B)/*/*/*/*.d $(B)/*/*/*/*/*.d)
