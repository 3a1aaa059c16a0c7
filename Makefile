# kvq -- non-recursive GNU make.
#
#   make            build the library, the kvq tool and the test programs
#   make test       unit tests (plain and ASan+UBSan), vector and must-fail tests
#   make demo       generate the standard vectors and verify the bundled subjects
#   make bench      exact-path generation and fast-path throughput
#   make proofs     Frama-C WP on the fast path; results under proofs/results/
#   make coverage   lcov line coverage of ref/ (gate: 90%)
#   make fuzz-smoke short libFuzzer runs of every harness
#   make gpu        CUDA kernels, the GPU subject, the GPU test and benchmark
#   make gpu-test   GPU conformance (prints SKIPPED without a CUDA device)
#   make install    PREFIX=/usr/local

.SUFFIXES:
.DELETE_ON_ERROR:
.PHONY: all test demo bench proofs coverage fuzz-smoke gpu gpu-test install clean \
        test-unit test-san test-vectors

B        := build
PREFIX   ?= /usr/local
NVCC     ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

CSTD     := -std=c11
WARN     := -Wall -Wextra -Werror
FPFLAGS  := -ffp-contract=off -fno-fast-math
CPPFLAGS := -Iinclude -Iconformance -D_POSIX_C_SOURCE=200809L
CFLAGS   ?= -O2 -g
LDLIBS   := -lmpfr -lgmp -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

# Build variants: rel (plain), san (ASan+UBSan), cov (gcov instrumentation).
FLAGS_rel :=
FLAGS_san := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FLAGS_cov := --coverage -O0

REF_SRC  := ref/common/status.c ref/common/fbits.c ref/fast/kivi.c \
            ref/exact/xfloat.c ref/exact/kivi.c
CONF_SRC := conformance/vecio.c conformance/gen.c conformance/verify.c \
            conformance/subject.c conformance/report.c conformance/bench.c
TESTS    := check_kivi check_vecio
SUBJECTS := broken_ties_away broken_high_first

# $(call variant,NAME): objects, library, kvq and tests of one build variant.
define variant
$(B)/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	$$(CC) $$(CSTD) $$(WARN) $$(FPFLAGS) $$(CPPFLAGS) $$(CFLAGS) $$(FLAGS_$(1)) -MMD -MP -c $$< -o $$@

$(B)/$(1)/libkvq.a: $(REF_SRC:%.c=$(B)/$(1)/%.o)
	@rm -f $$@
	$$(AR) rcs $$@ $$^

$(B)/$(1)/libkvqconf.a: $(CONF_SRC:%.c=$(B)/$(1)/%.o)
	@rm -f $$@
	$$(AR) rcs $$@ $$^

$(B)/$(1)/kvq: $(B)/$(1)/conformance/kvq.o $(B)/$(1)/libkvqconf.a $(B)/$(1)/libkvq.a
	$$(CC) $$(CFLAGS) $$(FLAGS_$(1)) $$^ -o $$@ $$(LDLIBS) -ldl

$(B)/$(1)/tests/%: $(B)/$(1)/tests/%.o $(B)/$(1)/libkvqconf.a $(B)/$(1)/libkvq.a
	$$(CC) $$(CFLAGS) $$(FLAGS_$(1)) $$^ -o $$@ $$(CHECK_LIBS) $$(LDLIBS) -ldl

-include $$(shell find $(B)/$(1) -name '*.d' 2>/dev/null)
endef
$(foreach v,rel san cov,$(eval $(call variant,$(v))))

# Deliberately wrong subjects (plug-ins built from the fast path with one defect).
$(B)/subjects/%.so: tests/subjects/%.c $(REF_SRC)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(FPFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -shared $^ -o $@ -lm

all: $(B)/rel/kvq $(TESTS:%=$(B)/rel/tests/%) $(SUBJECTS:%=$(B)/subjects/%.so)

# ---- tests ---------------------------------------------------------------
test: test-unit test-san test-vectors
	@echo "make test: all stages passed"

test-unit: $(TESTS:%=$(B)/rel/tests/%)
	@set -e; for t in $^; do echo "== $$t"; $$t; done

test-san: $(TESTS:%=$(B)/san/tests/%)
	@set -e; for t in $^; do echo "== $$t (ASan+UBSan)"; \
	  KVQ_RANDOM_CASES=20000 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $$t; done

test-vectors: $(B)/rel/kvq $(B)/san/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/vectors.sh $(B)

# ---- main job ------------------------------------------------------------
demo: $(B)/rel/kvq $(if $(NVCC),$(B)/gpu/libkvq_subject_gpu.so)
	$(B)/rel/kvq demo --out $(B)/demo $(if $(NVCC),--gpu-subject $(B)/gpu/libkvq_subject_gpu.so)

bench: $(B)/rel/kvq
	$(B)/rel/kvq bench

# ---- proofs, coverage, fuzzing -------------------------------------------
proofs:
	bash proofs/run.sh

coverage: $(TESTS:%=$(B)/cov/tests/%) $(B)/cov/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	bash ci/coverage.sh $(B)

fuzz-smoke:
	bash ci/fuzz-smoke.sh $(B)

# ---- GPU -----------------------------------------------------------------
NVFLAGS := -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -fmad=false \
           -Xcompiler -fPIC,-ffp-contract=off -Iinclude -Iconformance -Igpu
CU_SRC  := gpu/kivi.cu

$(B)/gpu/%.o: gpu/%.cu include/kvq_layout.h include/kvq.h gpu/kvq_cuda.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(B)/gpu/libkvq_subject_gpu.so: $(CU_SRC:gpu/%.cu=$(B)/gpu/%.o) $(B)/gpu/subject_gpu.o $(REF_SRC)
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lmpfr -lgmp -lm

$(B)/gpu/kvq_gpu_test: $(CU_SRC:gpu/%.cu=$(B)/gpu/%.o) $(B)/gpu/gpu_test.o $(B)/rel/libkvqconf.a $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) $^ -o $@ -lmpfr -lgmp -lm -ldl

$(B)/gpu/kvq_gpu_bench: $(CU_SRC:gpu/%.cu=$(B)/gpu/%.o) $(B)/gpu/bench.o $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) $^ -o $@ -lmpfr -lgmp -lm

gpu: $(B)/gpu/libkvq_subject_gpu.so $(B)/gpu/kvq_gpu_test $(B)/gpu/kvq_gpu_bench

gpu-test: $(B)/gpu/kvq_gpu_test $(B)/rel/kvq
	$(B)/gpu/kvq_gpu_test

# ---- install ---------------------------------------------------------------
install: $(B)/rel/kvq $(B)/rel/libkvq.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/kvq
	install -m 755 $(B)/rel/kvq $(DESTDIR)$(PREFIX)/bin/kvq
	install -m 644 $(B)/rel/libkvq.a $(DESTDIR)$(PREFIX)/lib/libkvq.a
	install -m 644 include/kvq.h include/kvq_layout.h include/kvq_exact.h include/kvq_bits.h \
	  conformance/kvq_subject.h $(DESTDIR)$(PREFIX)/include/kvq/

clean:
	rm -rf $(B)
