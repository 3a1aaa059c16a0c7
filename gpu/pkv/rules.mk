# gpu/pkv/rules.mk -- the PKV family's GPU programs (included by the Makefile, which
# finds this file by rule: gpu/*/rules.mk).
# GPU PKV (gpu/pkv/: kernel units pkv_assign.cu, pkv_quant.cu, pkv_dequant.cu,
# pkv_update.cu; the device test against ref/fast/pkv.c; the benchmark).  k-means
# at prefill stays on the host fast path (gpu/pkv/kvq_cuda_pkv.h says why).
PKV_GPU_HDR := include/kvq_pkv.h gpu/pkv/kvq_cuda_pkv.h gpu/pkv/pkv_dev.cuh gpu/kivi/kivi_dev.cuh
PKV_GPU_OBJ := $(patsubst gpu/%.cu,$(B)/gpu/%.o,$(filter gpu/pkv/%,$(CU_SRC)))
# the KIVI quantizer's pinned device arithmetic, shared with the PKV units
$(B)/gpu/kivi/kivi.o: gpu/kivi/kivi_dev.cuh
$(PKV_GPU_OBJ) $(B)/gpu/pkv/pkv_test.o $(B)/gpu/pkv/pkv_bench.o: $(PKV_GPU_HDR)
$(B)/gpu/ref/ref/fast/pkv.o: include/kvq_pkv.h
# the subject's PKV entries (gpu/pkv/entries.cu): pkv_kmeans is the host fast path
# [PKV-DEV-04] (prerequisites only; the subject's link rule takes $^)
$(B)/gpu/pkv/entries.o: $(PKV_GPU_HDR)
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/ref/ref/fast/pkv.o
$(B)/gpu/kvq_gpu_pkv_test: $(GPU_OBJ) $(B)/gpu/pkv/pkv_test.o $(GPU_REF_OBJ) $(B)/gpu/ref/ref/fast/pkv.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_pkv_bench: $(GPU_OBJ) $(B)/gpu/pkv/pkv_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
GPU_TARGETS += $(B)/gpu/kvq_gpu_pkv_test $(B)/gpu/kvq_pkv_bench

# PKV's part of `make gpu-test`: the device test (SKIPPED without a device, never a pass).
GPU_TESTS += gpu-check-pkv
.PHONY: gpu-check-pkv
gpu-check-pkv: $(B)/gpu/kvq_gpu_pkv_test
	$(B)/gpu/kvq_gpu_pkv_test

# The device test against planted bugs (gpu/pkv/pkv_dev.cuh, KVQ_PKV_PLANT = 1 .. 4): the
# same test program over kernel units built with one bug each; gpu/pkv/device-pkv.sh
# requires each to FAIL (a test that cannot fail proves nothing).  Not part of `make gpu`.
PKV_PLANT_SRC := $(filter gpu/pkv/%,$(CU_SRC))
define pkv_plant
$(B)/gpu-plant$(1)/pkv/%.o: gpu/pkv/%.cu $(GPU_HDR) $(PKV_GPU_HDR)
	@mkdir -p $$(@D)
	$$(NVCC) $$(NVFLAGS) -DKVQ_PKV_PLANT=$(1) -c $$< -o $$@
$(B)/gpu/kvq_gpu_pkv_test_plant$(1): $(filter-out $(PKV_GPU_OBJ),$(GPU_OBJ)) \
    $(PKV_PLANT_SRC:gpu/%.cu=$(B)/gpu-plant$(1)/%.o) $(B)/gpu/pkv/pkv_test.o $(GPU_REF_OBJ) \
    $(B)/gpu/ref/ref/fast/pkv.o
	$$(NVCC) $$(NVFLAGS) $$^ -o $$@ -lm
endef
$(foreach k,1 2 3 4,$(eval $(call pkv_plant,$(k))))
.PHONY: gpu-pkv-plant
gpu-pkv-plant: $(B)/gpu/kvq_gpu_pkv_test_plant1 $(B)/gpu/kvq_gpu_pkv_test_plant2 \
    $(B)/gpu/kvq_gpu_pkv_test_plant3 $(B)/gpu/kvq_gpu_pkv_test_plant4

# the benchmarks' timing (CK, time_med over cold-L2 reps)
$(B)/gpu/pkv/pkv_bench.o: gpu/bench_time.cuh
