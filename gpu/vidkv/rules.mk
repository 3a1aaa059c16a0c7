# gpu/vidkv/rules.mk -- the VIDKV family's GPU programs (included by the Makefile, which
# finds this file by rule: gpu/*/rules.mk).
# Kernel units: gpu/vidkv/split.cu, groups.cu, ternary.cu, stp.cu are found by rule (GPU_OBJ)
# and need only the CUDA runtime (stp.cu: CUB, header-only).  The FFT path and the composed key launchers,
# gpu/vidkv/fft/fft.cu, link cuFFT; they sit one level down so that GPU_OBJ (linked into
# every GPU program and the subject without -lcufft) does not carry them: the programs
# below link VIDKV_FFT_OBJ with -lcufft.
VIDKV_HDR := include/kvq_vidkv.h gpu/vidkv/kvq_cuda_vidkv.h gpu/vidkv/vidkv_dev.cuh
VIDKV_FFT_OBJ := $(B)/gpu/vidkv/fft/fft.o
$(filter $(B)/gpu/vidkv/%,$(GPU_OBJ)) $(VIDKV_FFT_OBJ) $(B)/gpu/vidkv/vidkv_test.o \
    $(B)/gpu/vidkv/vidkv_bench.o: $(VIDKV_HDR)
$(B)/gpu/vidkv/vidkv_test.o: ref/exact/outward.h
# the device test links the fast path (ref/fast/vidkv.c, kivi.c), never MPFR
$(B)/gpu/kvq_gpu_vidkv_test: $(GPU_OBJ) $(VIDKV_FFT_OBJ) $(B)/gpu/vidkv/vidkv_test.o $(GPU_REF_OBJ) \
    $(B)/gpu/ref/ref/fast/vidkv.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lcufft -lm
$(B)/gpu/kvq_vidkv_bench: $(GPU_OBJ) $(VIDKV_FFT_OBJ) $(B)/gpu/vidkv/vidkv_bench.o \
    $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lcufft -lm
GPU_TARGETS += $(B)/gpu/kvq_gpu_vidkv_test $(B)/gpu/kvq_vidkv_bench
# the subject's VIDKV entries (gpu/vidkv/entries.cu) call the key launchers of fft.cu: the
# subject links it and cuFFT (-lcufft as a prerequisite, found through vpath, since the
# subject's rule links $^)
vpath libcufft.so $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib
$(B)/gpu/vidkv/entries.o: $(VIDKV_HDR)
$(B)/gpu/libkvq_subject_gpu.so: $(VIDKV_FFT_OBJ) -lcufft
# its vidkv_stream is ref/fast/vidkv_stream.c's composition over device stages [VIDKV-DEV-05]:
# the subject links that unit and what it calls (the window and the fast path it also offers)
VIDKV_STREAM_REF_OBJ := $(B)/gpu/ref/ref/fast/vidkv_stream.o $(B)/gpu/ref/ref/fast/vidkv.o \
    $(B)/gpu/ref/ref/fast/kivi.o $(B)/gpu/ref/ref/common/fbits.o
$(B)/gpu/vidkv/entries.o: ref/fast/vidkv_stream.h
$(B)/gpu/ref/ref/fast/vidkv_stream.o: ref/fast/vidkv_stream.h include/kvq_vidkv.h
$(B)/gpu/libkvq_subject_gpu.so: $(VIDKV_STREAM_REF_OBJ)

# VIDKV's part of `make gpu-test`: the judge's self-test (host only: the judge must accept
# the reference's own FFT-path output and reject planted errors), then the device test.
GPU_TESTS += gpu-check-vidkv
.PHONY: gpu-check-vidkv
gpu-check-vidkv: $(B)/gpu/kvq_gpu_vidkv_test
	$(B)/gpu/kvq_gpu_vidkv_test --judge-selftest
	$(B)/gpu/kvq_gpu_vidkv_test

# The device test against planted bugs (KVQ_VIDKV_PLANT = 1..10): the same test program with
# one unit built with one bug -- gpu/vidkv/stp.cu 1, 2, 6; ternary.cu 3, 4; groups.cu 5, 7, 9,
# 10; split.cu 8 (VIDKV_PLANT_UNIT_k names the unit, the only one rebuilt for plant k);
# gpu/vidkv/device-vidkv.sh requires each to FAIL (a test that cannot fail proves nothing).
# Not part of `make gpu`.
VIDKV_PLANTS := 1 2 3 4 5 6 7 8 9 10
VIDKV_PLANT_UNIT_1 := stp
VIDKV_PLANT_UNIT_2 := stp
VIDKV_PLANT_UNIT_3 := ternary
VIDKV_PLANT_UNIT_4 := ternary
VIDKV_PLANT_UNIT_5 := groups
VIDKV_PLANT_UNIT_6 := stp
VIDKV_PLANT_UNIT_7 := groups
VIDKV_PLANT_UNIT_8 := split
VIDKV_PLANT_UNIT_9 := groups
VIDKV_PLANT_UNIT_10 := groups
define vidkv_plant
$(B)/gpu-plant$(1)/vidkv/%.o: gpu/vidkv/%.cu $(GPU_HDR) $(VIDKV_HDR)
	@mkdir -p $$(@D)
	$$(NVCC) $$(NVFLAGS) -DKVQ_VIDKV_PLANT=$(1) -c $$< -o $$@
$(B)/gpu/kvq_gpu_vidkv_test_plant$(1): $(filter-out $(B)/gpu/vidkv/$(VIDKV_PLANT_UNIT_$(1)).o,$(GPU_OBJ)) \
    $(B)/gpu-plant$(1)/vidkv/$(VIDKV_PLANT_UNIT_$(1)).o $(VIDKV_FFT_OBJ) $(B)/gpu/vidkv/vidkv_test.o \
    $(GPU_REF_OBJ) $(B)/gpu/ref/ref/fast/vidkv.o
	$$(NVCC) $$(NVFLAGS) $$^ -o $$@ -lcufft -lm
endef
$(foreach k,$(VIDKV_PLANTS),$(eval $(call vidkv_plant,$(k))))
.PHONY: gpu-vidkv-plant
gpu-vidkv-plant: $(foreach k,$(VIDKV_PLANTS),$(B)/gpu/kvq_gpu_vidkv_test_plant$(k))

# the benchmarks' timing (CK, time_med over cold-L2 reps)
$(B)/gpu/vidkv/vidkv_bench.o: gpu/bench_time.cuh
