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
#   make gpu-test   GPU conformance and a timed run of the certified decode
#                   check (prints SKIPPED without a CUDA device)
#   make install    PREFIX=/usr/local

.SUFFIXES:
.DELETE_ON_ERROR:
.PHONY: all test demo bench proofs coverage fuzz-smoke gpu gpu-test install clean \
        test-unit test-san test-vectors test-robustness test-shards test-cert test-golden test-layout trace print-tests

B        := build
PREFIX   ?= /usr/local
NVCC     ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

CSTD     := -std=c11
WARN     := -Wall -Wextra -Werror
FPFLAGS  := -ffp-contract=off -fno-fast-math
CPPFLAGS := -Iinclude -Iconformance -Itests -D_POSIX_C_SOURCE=200809L
CFLAGS   ?= -O2 -g
LDLIBS   := -lmpfr -lgmp -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

# Build variants: rel (plain), san (ASan+UBSan), cov (gcov instrumentation).
FLAGS_rel :=
FLAGS_san := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FLAGS_cov := --coverage -O0

# Sources by rule: every family's exact and fast paths (ref/exact/<f>.c,
# ref/fast/<f>*.c), the conformance core and every family module
# (conformance/families/<f>*.c), every Check suite (tests/check_*.c,
# tests/<f>/check_*.c), every test subject (tests/subjects/*.c,
# tests/<f>/subjects/*.c).  Adding a family adds files, not lines here.
REF_SRC  := $(sort $(wildcard ref/common/*.c ref/fast/*.c ref/exact/*.c))
CONF_SRC := conformance/registry.c conformance/vecio.c conformance/gen.c conformance/verify.c \
            conformance/outfile.c conformance/progress.c conformance/merge.c \
            conformance/subject.c conformance/report.c conformance/html.c \
            $(sort $(wildcard conformance/families/*.c))
TESTS    := $(patsubst tests/%.c,%,$(sort $(wildcard tests/check_*.c tests/*/check_*.c)))
SUBJECT_SRC := $(sort $(wildcard tests/subjects/*.c tests/*/subjects/*.c))
SUBJECTS := $(notdir $(SUBJECT_SRC:.c=))
# Test subjects link the whole fast path (every family's).
FAST_SRC := $(sort $(wildcard ref/common/*.c ref/fast/*.c))

# The GPU subject's CERT entries (gpu/subject_gpu.cu) call the device decode
# step, whose rung 4 is the host reference path: extra objects of its link
# (prerequisites only; the link rule of the GPU section takes $^).
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/cert_decode.o $(B)/gpu/ref/ref/common/fbits.o \
    $(B)/gpu/ref/ref/fast/kivi.o $(B)/gpu/ref/ref/fast/cert.o $(B)/gpu/ref/ref/fast/cert_step.o
# -- area: CERT lemma campaign
# `make cert-campaign`: the CERT lemma campaign (proofs/campaign/README.md),
# KVQ_CAMPAIGN_CASES cases (default 10^6), results under CAMPAIGN_OUT.
CAMPAIGN_SRC := proofs/campaign/cert_campaign.c
CAMPAIGN_BIN := $(B)/rel/proofs/campaign/cert_campaign
CAMPAIGN_OUT ?= $(B)/campaign
.PHONY: cert-campaign cert-campaign-smoke
$(CAMPAIGN_BIN): $(CAMPAIGN_SRC:%.c=$(B)/rel/%.o) $(B)/rel/libkvqconf.a $(B)/rel/libkvq.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
cert-campaign: $(CAMPAIGN_BIN)
	@mkdir -p $(CAMPAIGN_OUT)
	KVQ_CAMPAIGN_COMMIT=$$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
	  $(CAMPAIGN_BIN) --json $(CAMPAIGN_OUT)/cert-campaign.json --txt $(CAMPAIGN_OUT)/cert-campaign.txt
	@cat $(CAMPAIGN_OUT)/cert-campaign.txt
# CI size: 5000 cases (every statement; the contract K.5 on 79 steps, 40 paper and 39 sparse), 10-15 s.
cert-campaign-smoke: $(CAMPAIGN_BIN)
	@mkdir -p $(CAMPAIGN_OUT)
	KVQ_CAMPAIGN_CASES=5000 $(CAMPAIGN_BIN) --json $(CAMPAIGN_OUT)/smoke.json --txt $(CAMPAIGN_OUT)/smoke.txt
	@head -4 $(CAMPAIGN_OUT)/smoke.txt
.DEFAULT_GOAL := all

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

# Test subjects: the fast path with one deliberate change (tests/subjects/,
# tests/<family>/subjects/), one shared object each under $(B)/subjects/.  The
# fast path is compiled once, position-independent with hidden symbols, into
# $(B)/subjects/libfast.a, and each subject links the members it uses.
SUBJ_FAST_OBJ := $(FAST_SRC:%.c=$(B)/subjects/fast/%.o)
$(B)/subjects/fast/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(FPFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
$(B)/subjects/libfast.a: $(SUBJ_FAST_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^
-include $(shell find $(B)/subjects -name '*.d' 2>/dev/null)
define subject_rule
$(B)/subjects/$(notdir $(1:.c=)).so: $(1) $(wildcard tests/subjects/*.h) $(B)/subjects/libfast.a
	@mkdir -p $$(@D)
	$$(CC) $$(CSTD) $$(WARN) $$(FPFLAGS) $$(CPPFLAGS) -Itests/subjects $$(CFLAGS) -fPIC -shared \
	  -fvisibility=hidden -Wl,-Bsymbolic -MMD -MP -MF $$@.d $(1) $(B)/subjects/libfast.a -o $$@ -lm
endef
$(foreach s,$(SUBJECT_SRC),$(eval $(call subject_rule,$(s))))

all: $(B)/rel/kvq $(TESTS:%=$(B)/rel/tests/%) $(SUBJECTS:%=$(B)/subjects/%.so)

# ---- tests ---------------------------------------------------------------
test: test-unit test-san test-vectors test-robustness test-shards test-cert test-golden test-layout trace \
      test-python test-install
	@echo "make test: all stages passed"

# the suites run two at a time (tests/run-suites.sh; KVQ_JOBS overrides), each
# one's output printed whole
test-unit: $(TESTS:%=$(B)/rel/tests/%)
	@bash tests/run-suites.sh $^

test-san: $(TESTS:%=$(B)/san/tests/%)
	@bash tests/run-suites.sh --san $^

test-vectors: $(B)/rel/kvq $(B)/san/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/vectors.sh $(B)

test-cert: $(B)/san/kvq
	@bash tests/cert/cert.sh $(B)

# Bad input, odd output paths, subjects that write on error: each a defect once found.
test-robustness: $(B)/san/kvq $(B)/rel/libkvq.a $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/robustness.sh $(B)

# Sharded runs merged are the single run, by hand and by the Slurm and GNU
# parallel recipes (ci/recipes/).
test-shards: $(B)/rel/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/shards.sh $(B)

# Where a family's parts live, the registry as spec/ops.md shows it.
test-layout: $(B)/rel/kvq
	@bash tests/layout.sh $(B)

# The formats do not move: files written for fixed inputs hash as committed.
test-golden: $(B)/rel/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/golden.sh $(B)

trace:
	@bash ci/trace.sh

print-tests:
	@echo $(TESTS)

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
# The GPU targets link the fast path only (libm): no MPFR, no Check, so they
# build on a GPU machine that has neither.  Device arithmetic is pinned:
# -fmad=false, subnormals kept (-ftz=false), IEEE division (-prec-div=true).
NVFLAGS := -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -fmad=false -ftz=false \
           -prec-div=true -prec-sqrt=true -Xcompiler -fPIC,-ffp-contract=off \
           -Iinclude -Iconformance -Igpu
# A family's GPU sources are found by rule in gpu/<family>/: its kernel units
# are the .cu files there that are not programs (*_test.cu, *_bench.cu,
# *_floor.cu, *_matrix.cu, *_sweep.cu, *_probe.cu); the CERT decode step's units are
# gpu/cert/decode_*.cu (below).
# Shared pieces (kvq_cuda.h, the subject, the KIVI test and benchmark) stay in gpu/.
GPU_PROG_CU := %_test.cu %_bench.cu %_floor.cu %_matrix.cu %_sweep.cu %_probe.cu
GPU_KERNEL_SRC := $(sort $(filter-out $(GPU_PROG_CU),$(wildcard gpu/*/*.cu)))
CERT_DECODE_SRC := $(filter gpu/cert/decode_%.cu,$(GPU_KERNEL_SRC))
CU_SRC  := $(filter-out $(CERT_DECODE_SRC),$(GPU_KERNEL_SRC))
GPU_HDR := include/kvq_layout.h include/kvq.h include/kvq_cert.h include/kvq_bits.h gpu/kvq_cuda.h \
           gpu/testbed.h
GPU_REF_SRC := ref/common/status.c ref/common/fbits.c ref/fast/kivi.c
GPU_REF_OBJ := $(GPU_REF_SRC:%.c=$(B)/gpu/ref/%.o)
GPU_OBJ := $(CU_SRC:gpu/%.cu=$(B)/gpu/%.o)

$(B)/gpu/ref/%.o: %.c $(GPU_HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(FPFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -c $< -o $@

$(B)/gpu/%.o: gpu/%.cu $(GPU_HDR) conformance/kvq_subject.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(B)/gpu/libkvq_subject_gpu.so: $(GPU_OBJ) $(B)/gpu/subject_gpu.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm

$(B)/gpu/kvq_gpu_test: $(GPU_OBJ) $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

$(B)/gpu/kvq_gpu_cert_test: $(GPU_OBJ) $(B)/gpu/cert/cert_test.o $(GPU_REF_OBJ) $(B)/gpu/ref/ref/fast/cert.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

$(B)/gpu/kvq_gpu_bench: $(GPU_OBJ) $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

# -- area: GPU SAGE (gpu/sage/: kernels sage.cu and sage_ds.cu, test, benchmark, FP8
# conversion matrix, exhaustive FP8 sweep)
SAGE_HDR := include/kvq_sage.h include/kvq_sage_layout.h include/kvq_fp8.h
$(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o: gpu/sage/sage_common.cuh
$(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o $(B)/gpu/sage/sage_test.o $(B)/gpu/sage/sage_bench.o \
    $(B)/gpu/sage/fp8_matrix.o $(B)/gpu/sage/fp8_sweep.o: $(SAGE_HDR)
SAGE_REF_OBJ := $(B)/gpu/ref/ref/fast/sage.o $(B)/gpu/ref/ref/common/fp8.o
# the subject's sage_pv entry (device code: gpu/sage/mma_dev.cuh) checks its arguments
# by ref/fast/sage_attn.c's kvq_sage_pv_check (prerequisites: the link rule takes $^)
$(B)/gpu/subject_gpu.o: gpu/sage/mma_dev.cuh ref/fast/sage_attn_internal.h include/kvq_mma.h $(SAGE_HDR)
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/ref/ref/fast/sage_attn.o $(SAGE_REF_OBJ)
$(B)/gpu/ref/ref/fast/sage_attn.o: ref/fast/sage_attn_internal.h include/kvq_mma.h $(SAGE_HDR)
$(B)/gpu/kvq_gpu_sage_test: $(GPU_OBJ) $(B)/gpu/sage/sage_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_sage_bench: $(GPU_OBJ) $(B)/gpu/sage/sage_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_sage_fp8_matrix: $(B)/gpu/sage/fp8_matrix.o $(B)/gpu/ref/ref/common/fp8.o \
    $(B)/gpu/ref/ref/common/fbits.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
# every binary32 encoding through the device's FP8 conversions vs kvq_fp8_round_bits32
# (header only: links nothing of ref/)
$(B)/gpu/kvq_sage_fp8_sweep: $(B)/gpu/sage/fp8_sweep.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
# the accumulator probe: device tiles, judged on the host with OpenMP
$(B)/gpu/sage/mma_probe.o: include/kvq_mma.h gpu/sage/mma_dev.cuh
$(B)/gpu/sage/mma_probe.o: NVFLAGS += -Xcompiler -fopenmp
$(B)/gpu/kvq_sage_mma_probe: $(B)/gpu/sage/mma_probe.o
	$(NVCC) $(NVFLAGS) -Xcompiler -fopenmp $^ -o $@ -lm -lgomp
# the attention core and pipeline (gpu/sage/sage_attn.cu, a kernel unit of GPU_OBJ), its
# device test (bitwise against ref/fast/sage.c and the wgmma model; OpenMP host checks) and
# the shared library a benchmark loads (kvq_cuda_sage_attn, _workspace, _core, ...)
$(B)/gpu/sage/sage_attn.o: $(SAGE_HDR) include/kvq_sage_attn.h
$(B)/gpu/sage/attn_test.o: $(SAGE_HDR) include/kvq_sage_attn.h include/kvq_mma.h
$(B)/gpu/sage/attn_test.o: NVFLAGS += -Xcompiler -fopenmp
$(B)/gpu/kvq_gpu_sage_attn_test: $(GPU_OBJ) $(B)/gpu/sage/attn_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ) \
    $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) -Xcompiler -fopenmp $^ -o $@ -lmpfr -lgmp -lm -lgomp
# the device's ex2.approx.ftz.f32 on every non-positive binary32 argument ([TR-EX2])
$(B)/gpu/kvq_sage_ex2_sweep: $(B)/gpu/sage/ex2_sweep.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/libkvq_sage_attn.so: $(GPU_OBJ) $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm
GPU_SAGE_TARGETS := $(B)/gpu/kvq_gpu_sage_test $(B)/gpu/kvq_sage_bench $(B)/gpu/kvq_sage_fp8_matrix \
                    $(B)/gpu/kvq_sage_fp8_sweep $(B)/gpu/kvq_sage_mma_probe \
                    $(B)/gpu/kvq_gpu_sage_attn_test $(B)/gpu/libkvq_sage_attn.so $(B)/gpu/kvq_sage_ex2_sweep

# -- area: GPU certified decode (gpu/cert/decode_*.cu and its test and benchmark)
# The device check links the rel library (the exact MPFR path judges every
# step), so it is not part of `make gpu` (which must build without MPFR): it
# builds where MPFR is installed (make gpu-test, make gpu-test-cert) and is
# carried to a device machine without MPFR with libmpfr/libgmp
# (gpu/device-cert.sh).
# The decode step is one unit a kernel (with the host code that launches it)
# and its host side (gpu/cert/decode_step.cu), sharing gpu/cert/*.cuh; each
# unit is compiled whole (no relocatable device code), and
# $(B)/gpu/cert_decode.o joins them for the links by a host partial link
# (ld -r), which leaves each unit's device code as it is.
GPU_CERT_TARGETS := $(B)/gpu/libkvq_cert_bench.so
CERT_DECODE_HDR := $(wildcard gpu/cert/*.cuh)
CERT_DECODE_OBJ := $(CERT_DECODE_SRC:gpu/%.cu=$(B)/gpu/%.o)
GPU_CERT_OBJ := $(B)/gpu/cert_decode.o $(GPU_OBJ)

$(CERT_DECODE_OBJ): $(CERT_DECODE_HDR)

$(B)/gpu/cert_decode.o: $(CERT_DECODE_OBJ)
	$(LD) -r $^ -o $@

$(B)/gpu/kvq_gpu_cert_decode_test: $(GPU_CERT_OBJ) $(B)/gpu/cert/cert_decode_test.o \
    $(B)/rel/libkvq.a $(B)/rel/conformance/families/cert_dump.o
	$(NVCC) $(NVFLAGS) $(B)/gpu/cert/cert_decode_test.o $(GPU_CERT_OBJ) \
	  $(B)/rel/conformance/families/cert_dump.o $(B)/rel/libkvq.a -o $@ -lmpfr -lgmp -lm -lpthread

$(B)/gpu/libkvq_cert_bench.so: $(GPU_CERT_OBJ) $(B)/gpu/cert/cert_bench.o $(GPU_REF_OBJ) \
    $(B)/gpu/ref/ref/fast/cert.o $(B)/gpu/ref/ref/fast/cert_step.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm

.PHONY: gpu-test-cert
gpu-test-cert: $(B)/gpu/kvq_gpu_cert_decode_test
	$(B)/gpu/kvq_gpu_cert_decode_test

# The decode step with %globaltimer stamps at its stage boundaries (a
# diagnostics build, -DKVQ_CERT_TIMELINE; gpu/cert/cert_timeline.py reads them).
CERT_DECODE_TL_OBJ := $(CERT_DECODE_SRC:gpu/%.cu=$(B)/gpu-tl/%.o)

$(B)/gpu-tl/%.o: gpu/%.cu $(GPU_HDR) $(CERT_DECODE_HDR) conformance/kvq_subject.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_CERT_TIMELINE -c $< -o $@

$(B)/gpu-tl/cert_decode.o: $(CERT_DECODE_TL_OBJ)
	$(LD) -r $^ -o $@

$(B)/gpu/libkvq_cert_timeline.so: $(B)/gpu-tl/cert_decode.o $(GPU_OBJ) \
    $(B)/gpu/cert/cert_bench.o $(GPU_REF_OBJ) $(B)/gpu/ref/ref/fast/cert.o $(B)/gpu/ref/ref/fast/cert_step.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm

.PHONY: gpu-cert-timeline
gpu-cert-timeline: $(B)/gpu/libkvq_cert_timeline.so

gpu: $(B)/gpu/libkvq_subject_gpu.so $(B)/gpu/kvq_gpu_test $(B)/gpu/kvq_gpu_cert_test \
     $(B)/gpu/kvq_gpu_bench $(GPU_CERT_TARGETS) $(B)/gpu/kvq_cert_floor $(GPU_SAGE_TARGETS)

# What the device alone costs for the step's traffic and waits (gpu/cert/cert_floor.cu;
# gpu/device-cert.sh floor).
$(B)/gpu/kvq_cert_floor: gpu/cert/cert_floor.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $< -o $@

# gpu-test also runs the certified decode check for GPU_TEST_CERT_SECONDS
# (every step it sends is judged exactly); gpu-test-cert runs all 10^5 steps.
GPU_TEST_CERT_SECONDS ?= 120
gpu-test: $(B)/gpu/kvq_gpu_test $(B)/gpu/kvq_gpu_cert_test $(B)/gpu/kvq_gpu_sage_test \
          $(B)/gpu/kvq_gpu_cert_decode_test $(B)/gpu/kvq_sage_mma_probe $(B)/gpu/kvq_gpu_sage_attn_test \
          $(B)/gpu/kvq_sage_ex2_sweep
	$(B)/gpu/kvq_gpu_test
	$(B)/gpu/kvq_gpu_cert_test
	$(B)/gpu/kvq_gpu_sage_test
	@rc=0; $(B)/gpu/kvq_gpu_sage_attn_test || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "gpu-test: kvq_gpu_sage_attn_test SKIPPED (exit 77), not a pass"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	@rc=0; $(B)/gpu/kvq_sage_ex2_sweep || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "gpu-test: kvq_sage_ex2_sweep SKIPPED (exit 77), not a pass"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	$(B)/gpu/kvq_sage_mma_probe --confirm --tiles 20000
	KVQ_CERT_SECONDS=$(GPU_TEST_CERT_SECONDS) $(B)/gpu/kvq_gpu_cert_decode_test

# ---- install ---------------------------------------------------------------
# `make install [PREFIX=/usr/local] [DESTDIR=]`: kvq, libkvq.a, the headers
# (include/kvq), the man page, a pkg-config file written here with PREFIX as
# its prefix (lib/pkgconfig/kvq.pc: Cflags -I${includedir}/kvq, Libs -lkvq
# -lmpfr -lgmp -lm), the Python module kvqio and the PyTorch example
# (share/kvq/python, share/kvq/examples).  `make test-install` checks it.
install: $(B)/rel/kvq $(B)/rel/libkvq.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/kvq \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/kvq/python $(DESTDIR)$(PREFIX)/share/kvq/examples
	install -m 755 $(B)/rel/kvq $(DESTDIR)$(PREFIX)/bin/kvq
	install -m 644 $(B)/rel/libkvq.a $(DESTDIR)$(PREFIX)/lib/libkvq.a
	install -m 644 include/kvq.h include/kvq_cert.h include/kvq_layout.h include/kvq_exact.h include/kvq_bits.h \
	  include/kvq_fp8.h include/kvq_exact_fp8.h include/kvq_sage.h include/kvq_sage_layout.h \
	  include/kvq_exact_sage.h include/kvq_mma.h include/kvq_sage_attn.h include/kvq_vidkv.h \
  include/kvq_exact_vidkv.h conformance/kvq_subject.h $(DESTDIR)$(PREFIX)/include/kvq/
	@if [ -x $(B)/gpu/kvq_sage_mma_probe ]; then \
	  install -d $(DESTDIR)$(PREFIX)/libexec/kvq && \
	  install -m 755 $(B)/gpu/kvq_sage_mma_probe $(DESTDIR)$(PREFIX)/libexec/kvq/kvq_sage_mma_probe && \
	  echo "installed the probe program (kvq probe) in $(DESTDIR)$(PREFIX)/libexec/kvq"; fi
	install -m 644 conformance/kvq.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvq.1
	install -m 644 conformance/python/kvqio.py $(DESTDIR)$(PREFIX)/share/kvq/python/kvqio.py
	install -m 644 gpu/examples/torch_kivi.py gpu/examples/README.md $(DESTDIR)$(PREFIX)/share/kvq/examples/
	@v=$$($(B)/rel/kvq version | awk '{print $$2}') && \
	  printf '%s\n' 'prefix=$(PREFIX)' 'exec_prefix=$${prefix}' 'libdir=$${exec_prefix}/lib' \
	    'includedir=$${prefix}/include' '' 'Name: kvq' \
	    'Description: verified reference and conformance suite for KV-cache quantizers' \
	    "Version: $$v" 'Cflags: -I$${includedir}/kvq' 'Libs: -L$${libdir} -lkvq -lmpfr -lgmp -lm' \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc && chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc && \
	  echo "wrote $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc (kvq $$v)"

# The Python module (conformance/python): unit tests, vectors of the built kvq
# read and re-written byte for byte, a pure-Python KIVI subject judged by
# `kvq verify --results`.  The install check: tests/install.sh.
.PHONY: test-python test-install
test-python: $(B)/rel/kvq
	@echo "== conformance/python (python3 -m unittest test_kvqio)"
	@cd conformance/python && KVQ=$(abspath $(B))/rel/kvq PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_kvqio
test-install: $(B)/rel/kvq $(B)/rel/libkvq.a
	+@bash tests/install.sh $(B) "$(MAKE)"

# -- area: FP8 exhaustive check
# `make fp8-exhaustive`: all 2^32 binary32 inputs x {E4M3, E5M2} x {saturate,
# nan}, fast path against the exact path (tests/fp8_exhaustive.c says how the
# exact path judges every input).  Minutes; not part of `make test`.
# KVQ_FP8_FROM / KVQ_FP8_TO slice the encodings, KVQ_FP8_THREADS (default: all
# CPUs), KVQ_FP8_EXACT_EVERY (direct MPFR samples; 1 = every input).
.PHONY: fp8-exhaustive
fp8-exhaustive: $(B)/rel/tests/fp8_exhaustive
	$(B)/rel/tests/fp8_exhaustive

clean:
	rm -rf $(B)
