# gpu/cert/rules.mk -- the CERT family's GPU programs (included by the Makefile, which
# finds this file by rule: gpu/*/rules.mk).

# The GPU subject's CERT entries (gpu/cert/entries.cu) call the device decode
# step, whose rung 4 is the host reference path: extra objects of its link
# (prerequisites only; the subject's link rule takes $^).
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/cert_decode.o $(B)/gpu/ref/ref/common/fbits.o \
    $(B)/gpu/ref/ref/fast/kivi.o $(B)/gpu/ref/ref/fast/cert.o $(B)/gpu/ref/ref/fast/cert_step.o

$(B)/gpu/kvq_gpu_cert_test: $(GPU_OBJ) $(B)/gpu/cert/cert_test.o $(GPU_REF_OBJ) $(B)/gpu/ref/ref/fast/cert.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm

# GPU certified decode (gpu/cert/decode_*.cu and its test and benchmark)
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
CERT_DECODE_SRC := $(filter gpu/cert/decode_%.cu,$(GPU_DECODE_SRC))
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

# The device check over Phase 2 with a planted bug (KVQ_CERT_PLANT=1: a segment
# recomputed after the selection keeps the selected tokens [CERT-DEV-10]); it
# must FAIL (gpu/cert/device-certpipe.sh runs it).
$(B)/gpu-plant-cert/cert/decode_phase2p.o: gpu/cert/decode_phase2p.cu $(GPU_HDR) $(CERT_DECODE_HDR) \
    conformance/kvq_subject.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_CERT_PLANT=1 -c $< -o $@

$(B)/gpu-plant-cert/cert_decode.o: $(filter-out $(B)/gpu/cert/decode_phase2p.o,$(CERT_DECODE_OBJ)) \
    $(B)/gpu-plant-cert/cert/decode_phase2p.o
	$(LD) -r $^ -o $@

$(B)/gpu/kvq_gpu_cert_decode_test_plant: $(B)/gpu-plant-cert/cert_decode.o $(GPU_OBJ) \
    $(B)/gpu/cert/cert_decode_test.o $(B)/rel/libkvq.a $(B)/rel/conformance/families/cert_dump.o
	$(NVCC) $(NVFLAGS) $(B)/gpu/cert/cert_decode_test.o $(B)/gpu-plant-cert/cert_decode.o $(GPU_OBJ) \
	  $(B)/rel/conformance/families/cert_dump.o $(B)/rel/libkvq.a -o $@ -lmpfr -lgmp -lm -lpthread

# What gpu/cert/device-certpipe.sh runs, built here (the decode tests link MPFR)
# and packed into one file to carry to a device machine (with an earlier
# commit's benchmark library when gpu/cert/bench-old.sh made one, a second
# one renamed libkvq_cert_bench_ref.so, and the timeline build when make
# gpu-cert-timeline made it).
CERT_CARRY := $(B)/gpu/kvq_gpu_cert_decode_test $(B)/gpu/kvq_gpu_cert_decode_test_plant \
    $(B)/gpu/libkvq_subject_gpu.so $(B)/gpu/libkvq_cert_bench.so $(B)/gpu/kvq_cert_floor
.PHONY: gpu-cert-carry
gpu-cert-carry: $(CERT_CARRY)
	tar -czf $(B)/gpu/cert-carry.tar.gz $(CERT_CARRY) \
	  $(wildcard $(B)/gpu/libkvq_cert_bench_old.so $(B)/gpu/libkvq_cert_bench_old.commit \
	    $(B)/gpu/libkvq_cert_bench_ref.so $(B)/gpu/libkvq_cert_bench_ref.commit \
	    $(B)/gpu/libkvq_cert_timeline.so)

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

# What the device alone costs for the step's traffic and waits (gpu/cert/cert_floor.cu;
# gpu/device-cert.sh floor).
$(B)/gpu/kvq_cert_floor: gpu/cert/cert_floor.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $< -o $@


GPU_TARGETS += $(B)/gpu/kvq_gpu_cert_test $(B)/gpu/libkvq_cert_bench.so $(B)/gpu/kvq_cert_floor

# CERT's part of `make gpu-test`: the quantizer device test, then the certified
# decode check for GPU_TEST_CERT_SECONDS (every step it sends is judged exactly);
# gpu-test-cert runs all 10^5 steps.
GPU_TEST_CERT_SECONDS ?= 120
GPU_TESTS += gpu-check-cert
.PHONY: gpu-check-cert
gpu-check-cert: $(B)/gpu/kvq_gpu_cert_test $(B)/gpu/kvq_gpu_cert_decode_test
	$(B)/gpu/kvq_gpu_cert_test
	KVQ_CERT_SECONDS=$(GPU_TEST_CERT_SECONDS) $(B)/gpu/kvq_gpu_cert_decode_test
