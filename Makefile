# kvq -- non-recursive GNU make.
#
#   make            build the library, the kvq tool and the test programs
#   make test       unit tests (plain and ASan+UBSan), vector and must-fail tests
#   make test-slurm the Slurm job-array recipe on a single-node Slurm it starts (root)
#   make demo       generate the standard vectors and verify the bundled subjects
#   make bench      exact-path generation and fast-path throughput
#   make proofs     Frama-C WP on the fast path, gated by proofs/inventory.txt; results under proofs/results/
#                   (runs make coq and make proofs-gappa first)
#   make proofs-gappa  the float facts of proofs/gappa/*.g proved by Gappa
#   make coq        the CERT certificate theorems checked by coqc (proofs/coq/)
#   make proof-mutants  planted bugs that must each fail the WP run
#   make coverage   lcov line coverage of ref/ (gate: 90%)
#   make fuzz-smoke short libFuzzer runs of every harness
#   make gpu        CUDA kernels, the GPU subject, the GPU test and benchmark
#   make gpu-test   GPU conformance and a timed run of the certified decode
#                   check (prints SKIPPED without a CUDA device)
#   make install    PREFIX=/usr/local

.SUFFIXES:
.DELETE_ON_ERROR:
.PHONY: all test demo bench proofs proofs-full proofs-inventory proofs-gappa coq coverage fuzz-smoke gpu gpu-test install clean \
        test-unit test-san test-vectors test-robustness test-shards test-reports test-cert test-golden test-layout trace \
        print-tests test-slurm

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
CONF_SRC := conformance/registry.c conformance/rule.c conformance/regjson.c conformance/vecio.c conformance/gen.c conformance/verify.c \
            conformance/outfile.c conformance/progress.c conformance/merge.c \
            conformance/subject.c conformance/report.c conformance/html.c \
            conformance/provenance.c conformance/sha256.c \
            $(sort $(wildcard conformance/families/*.c))
TESTS    := $(patsubst tests/%.c,%,$(sort $(wildcard tests/check_*.c tests/*/check_*.c)))
SUBJECT_SRC := $(sort $(wildcard tests/subjects/*.c tests/*/subjects/*.c))
SUBJECTS := $(notdir $(SUBJECT_SRC:.c=))
# Test subjects link the whole fast path (every family's).
FAST_SRC := $(sort $(wildcard ref/common/*.c ref/fast/*.c))

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

# kvq's commit, recorded in every report [VER-REP-05]: `git describe --always
# --dirty` of this tree at build time ("unknown" outside a git checkout).
# $(B)/commit holds it and changes only when it does, so provenance.o is
# rebuilt then and only then.
KVQ_COMMIT := $(shell test -e .git && git describe --always --dirty 2>/dev/null || echo unknown)
$(shell mkdir -p $(B) && (echo '$(KVQ_COMMIT)' | cmp -s - $(B)/commit || echo '$(KVQ_COMMIT)' > $(B)/commit))
$(foreach v,rel san cov,$(B)/$(v)/conformance/provenance.o): $(B)/commit
$(foreach v,rel san cov,$(B)/$(v)/conformance/provenance.o): CPPFLAGS += -DKVQ_COMMIT='"$(KVQ_COMMIT)"'

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
test: test-unit test-san test-vectors test-robustness test-shards test-reports test-cert test-golden test-layout trace \
      test-python test-install test-toy test-proofgate
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

# The Slurm recipe on a real single-node Slurm that tests/slurm.sh starts and
# stops (root; slurm-wlm and munge from ci/setup.sh): not part of `make test`.
test-slurm: $(B)/rel/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/slurm.sh $(B)

# What every report records of what it judged, and kvq report-check.
test-reports: $(B)/rel/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/reports.sh $(B)

# Where a family's parts live, the registry as spec/ops.md shows it.
test-layout: $(B)/rel/kvq $(B)/registry.json
	@bash tests/layout.sh $(B)

# A family kvq has never seen, added to a scratch copy of the tree by its files
# and two registry lines only: kvq, its description, golden.sh and install take it.
.PHONY: test-toy
test-toy: $(B)/rel/kvq
	@bash tests/toy/toy.sh $(B)

# The registry description [VER-REG-12]: BUILD/registry.json from the built
# kvq; `make registry-json` refreshes the checked-in copy and spec/ops.md
# (tests/layout.sh fails while either differs from what kvq prints).
$(B)/registry.json: $(B)/rel/kvq
	$(B)/rel/kvq ops --json -o $@
.PHONY: registry-json
registry-json: $(B)/registry.json
	cp $(B)/registry.json conformance/registry.json
	{ sed '/<!-- BEGIN kvq ops --markdown -->/q' spec/ops.md; $(B)/rel/kvq ops --markdown; \
	  sed -n '/<!-- END kvq ops --markdown -->/,$$p' spec/ops.md; } > spec/ops.md.tmp && mv spec/ops.md.tmp spec/ops.md

# The formats do not move: files written for fixed inputs hash as committed.
test-golden: $(B)/rel/kvq $(SUBJECTS:%=$(B)/subjects/%.so)
	@bash tests/golden.sh $(B)

trace:
	@bash ci/trace.sh

# The proof gate's bookkeeping on made-up WP output (no Frama-C): statement
# hashes, the inventory comparison, the tool pins.
.PHONY: test-proofgate
test-proofgate:
	@bash tests/proofgate.sh

print-tests:
	@echo $(TESTS)

# ---- main job ------------------------------------------------------------
demo: $(B)/rel/kvq $(if $(NVCC),$(B)/gpu/libkvq_subject_gpu.so)
	$(B)/rel/kvq demo --out $(B)/demo $(if $(NVCC),--gpu-subject $(B)/gpu/libkvq_subject_gpu.so)

bench: $(B)/rel/kvq
	$(B)/rel/kvq bench

# ---- proofs, coverage, fuzzing -------------------------------------------
# `make proofs` reruns the WP runs whose stamp (settings, tool versions,
# sources) differs from proofs/inventory.txt and fails on a goal that differs
# from it; proofs-full reruns every run; proofs-inventory writes the goals of
# the changed runs into the inventory (a deliberate change).
proofs: coq proofs-gappa
	bash proofs/run.sh

proofs-full:
	KVQ_WP_FULL=1 bash proofs/run.sh

proofs-inventory:
	KVQ_WP_WRITE=1 bash proofs/run.sh

proofs-gappa:
	bash proofs/gappa/run.sh
# `make coq`: coqc on every file of proofs/coq/, no open proof outside
# proofs/coq/ADMITTED.md (proofs/coq/README.md)
coq:
	B=$(B) bash proofs/coq/check.sh

# Each planted bug of proofs/mutants.sh must fail the WP run (proofs/README.md).
.PHONY: proof-mutants
proof-mutants:
	bash proofs/mutants.sh

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
# CUTLASS/CuTe C++ headers (the PyPI wheel nvidia-cutlass, pinned in ci/setup.sh, which
# installs it into KVQ_DEPS): the include folder of its package cutlass_library
# (source/include: cute/ and cutlass/), found through $(PYTHON) with KVQ_DEPS on its path
# when not given (make CUTLASS_INC=DIR).  Only the programs that use CuTe need it: their
# objects depend on cutlass-check, which stops with what is missing (exit 2) before
# anything is compiled.
PYTHON ?= python3
KVQ_DEPS ?= $(HOME)/.local/share/kvq/python
CUTLASS_VERSION := 4.2.0.0
CUTLASS_INC ?= $(shell PYTHONPATH='$(KVQ_DEPS)'$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -c 'import importlib.util as u, os; s = u.find_spec("cutlass_library"); print(os.path.join(os.path.dirname(s.origin), "source", "include") if s and s.origin else "")' 2>/dev/null)
.PHONY: cutlass-check
cutlass-check:
	@if [ -z "$(CUTLASS_INC)" ]; then \
	  echo "Makefile: error: CUTLASS/CuTe headers not found: no Python package cutlass_library through $(PYTHON) or in KVQ_DEPS=$(KVQ_DEPS) (install nvidia-cutlass==$(CUTLASS_VERSION): ci/setup.sh), and CUTLASS_INC not given" >&2; exit 2; fi
	@if [ ! -f "$(CUTLASS_INC)/cute/tensor.hpp" ] || [ ! -f "$(CUTLASS_INC)/cutlass/version.h" ]; then \
	  echo "Makefile: error: CUTLASS_INC=$(CUTLASS_INC): no cute/tensor.hpp or cutlass/version.h there" >&2; exit 2; fi
	@v=$$(awk '/^#define CUTLASS_(MAJOR|MINOR) /{printf "%s.", $$3}' "$(CUTLASS_INC)/cutlass/version.h"); \
	  if [ "$$v" != "4.2." ]; then \
	  echo "Makefile: error: CUTLASS_INC=$(CUTLASS_INC): CUTLASS $${v%.}, kvq pins 4.2 (nvidia-cutlass==$(CUTLASS_VERSION))" >&2; exit 2; fi
# A family's GPU sources are found by rule in gpu/<family>/ (a family without
# kernels has none, and nothing here names one): its kernel units are the .cu
# files there that are not programs (*_test.cu, *_bench.cu, *_floor.cu,
# *_matrix.cu, *_sweep.cu, *_probe.cu), not its subject entries (entries.cu,
# linked into the GPU subject only, gpu/subject_gpu.h) and not the units of a
# decode step (decode_*.cu, joined by a partial link in the family's rules);
# gpu/<family>/rules.mk, included below, holds the rules of its own programs
# and adds them to GPU_TARGETS (`make gpu`) and GPU_TESTS (`make gpu-test`).
# Shared pieces (kvq_cuda.h, the subject, the KIVI test and benchmark) stay in gpu/.
GPU_PROG_CU := %_test.cu %_bench.cu %_floor.cu %_matrix.cu %_sweep.cu %_probe.cu %/entries.cu
GPU_KERNEL_SRC := $(sort $(filter-out $(GPU_PROG_CU),$(wildcard gpu/*/*.cu)))
GPU_DECODE_SRC := $(foreach f,$(GPU_KERNEL_SRC),$(if $(findstring /decode_,$(f)),$(f)))
CU_SRC  := $(filter-out $(GPU_DECODE_SRC),$(GPU_KERNEL_SRC))
GPU_ENTRY_SRC := $(sort $(wildcard gpu/*/entries.cu))
GPU_ENTRY_OBJ := $(GPU_ENTRY_SRC:gpu/%.cu=$(B)/gpu/%.o)
GPU_HDR := include/kvq_layout.h include/kvq.h include/kvq_cert.h include/kvq_bits.h gpu/kvq_cuda.h \
           gpu/kvq_cuda_check.h \
           gpu/testbed.h gpu/subject_gpu.h gpu/devbuf.cuh gpu/dependent.cuh
GPU_REF_SRC := ref/common/status.c ref/common/fbits.c ref/fast/kivi.c
GPU_REF_OBJ := $(GPU_REF_SRC:%.c=$(B)/gpu/ref/%.o)
GPU_OBJ := $(CU_SRC:gpu/%.cu=$(B)/gpu/%.o)

$(B)/gpu/ref/%.o: %.c $(GPU_HDR)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(FPFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -c $< -o $@

$(B)/gpu/%.o: gpu/%.cu $(GPU_HDR) conformance/kvq_subject.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# The CUDA subject: the families' entries (gpu/*/entries.cu) around gpu/subject_gpu.cu;
# a family's rules.mk adds what its entries link (prerequisites: the rule takes $^).
$(B)/gpu/libkvq_subject_gpu.so: $(GPU_OBJ) $(GPU_ENTRY_OBJ) $(B)/gpu/subject_gpu.o \
    $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm

$(B)/gpu/kvq_gpu_test: $(GPU_OBJ) $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

$(B)/gpu/kvq_gpu_bench: $(GPU_OBJ) $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

-include $(wildcard gpu/*/rules.mk)

gpu: $(B)/gpu/libkvq_subject_gpu.so $(B)/gpu/kvq_gpu_test $(B)/gpu/kvq_gpu_bench $(GPU_TARGETS)

# gpu-test: the KIVI device test, then each family's (GPU_TESTS, in order).
gpu-test: $(B)/gpu/kvq_gpu_test
	$(B)/gpu/kvq_gpu_test
	@for t in $(GPU_TESTS); do $(MAKE) --no-print-directory $$t || exit 1; done

# ---- install ---------------------------------------------------------------
# `make install [PREFIX=/usr/local] [DESTDIR=]`: kvq, libkvq.a, the headers
# (include/kvq: every header of include/ -- each is public, a family's too --
# and the subject ABI), the man page, a pkg-config file written here with
# PREFIX as its prefix (lib/pkgconfig/kvq.pc: Cflags -I${includedir}/kvq, Libs
# -lkvq -lmpfr -lgmp -lm), the Python module kvqio, the registry description
# of the kvq installed (kvq ops --json) and the PyTorch example (share/kvq/python with its registry.json,
# share/kvq/examples).  `make test-install` checks it.
PUBLIC_HDR := $(sort $(wildcard include/*.h)) conformance/kvq_subject.h
install: $(B)/rel/kvq $(B)/rel/libkvq.a $(B)/registry.json
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/kvq \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/kvq/python $(DESTDIR)$(PREFIX)/share/kvq/examples
	install -m 755 $(B)/rel/kvq $(DESTDIR)$(PREFIX)/bin/kvq
	install -m 644 $(B)/rel/libkvq.a $(DESTDIR)$(PREFIX)/lib/libkvq.a
	install -m 644 $(PUBLIC_HDR) $(DESTDIR)$(PREFIX)/include/kvq/
	@if [ -x $(B)/gpu/kvq_sage_mma_probe ]; then \
	  install -d $(DESTDIR)$(PREFIX)/libexec/kvq && \
	  install -m 755 $(B)/gpu/kvq_sage_mma_probe $(DESTDIR)$(PREFIX)/libexec/kvq/kvq_sage_mma_probe && \
	  echo "installed the probe program (kvq probe) in $(DESTDIR)$(PREFIX)/libexec/kvq"; fi
	install -m 644 conformance/kvq.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvq.1
	install -m 644 conformance/python/kvqio.py conformance/python/README.md $(DESTDIR)$(PREFIX)/share/kvq/python/
	install -m 644 $(B)/registry.json $(DESTDIR)$(PREFIX)/share/kvq/python/registry.json
	install -m 644 gpu/examples/torch_kivi.py gpu/examples/torch_sage.py gpu/examples/README.md \
	  $(DESTDIR)$(PREFIX)/share/kvq/examples/
	@v=$$($(B)/rel/kvq version | awk '{print $$2}') && \
	  printf '%s\n' 'prefix=$(PREFIX)' 'exec_prefix=$${prefix}' 'libdir=$${exec_prefix}/lib' \
	    'includedir=$${prefix}/include' '' 'Name: kvq' \
	    'Description: verified reference and conformance suite for KV-cache quantizers' \
	    "Version: $$v" 'Cflags: -I$${includedir}/kvq' 'Libs: -L$${libdir} -lkvq -lmpfr -lgmp -lm' \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc && chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc && \
	  echo "wrote $(DESTDIR)$(PREFIX)/lib/pkgconfig/kvq.pc (kvq $$v)"

# The Python module (conformance/python): unit tests, vectors of the built kvq
# read and re-written byte for byte, a pure-Python KIVI subject judged by
# `kvq verify --results`; the FA3 core's barrier protocol run as a model to
# completion on every tile (spec/sage.md [SAGE-DEV-13], [SAGE-DEV-21]).  The
# install check: tests/install.sh.
.PHONY: test-python test-install
test-python: $(B)/rel/kvq
	@echo "== conformance/python (python3 -m unittest test_kvqio)"
	@cd conformance/python && KVQ=$(abspath $(B))/rel/kvq PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_kvqio
	@echo "== gpu/sage/fa3_schedule.py (the FA3 core's barrier protocol as a model, every level's order)"
	@PYTHONDONTWRITEBYTECODE=1 python3 gpu/sage/fa3_schedule.py
test-install: $(B)/rel/kvq $(B)/rel/libkvq.a $(B)/registry.json
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

# -- area: the CUDA quantizers' division-free codes
# `make fastquot-full`: tests/check_fastquot.c over every 4th binade, groups across
# zero and both signs ([KIVI-DEV-01] [SAGE-DEV-10]); make test runs its default grid.
.PHONY: fastquot-full
fastquot-full: $(B)/rel/tests/check_fastquot
	KVQ_FASTQUOT_FULL=1 $(B)/rel/tests/check_fastquot

clean:
	rm -rf $(B)
