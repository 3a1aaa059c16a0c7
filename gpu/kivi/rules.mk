# gpu/kivi/rules.mk -- the quantizers' own device programs (included by the Makefile, which
# finds this file by rule: gpu/*/rules.mk).  The KIVI test and benchmark of `make gpu`
# (build/gpu/kvq_gpu_test, kvq_gpu_bench) link every family's kernels; these link only what
# the quantizers need, so that gpu/kivi/device-quant.sh builds them on the device in seconds:
#   kvq_gpu_kivi_test         gpu/gpu_test.cu over gpu/kivi/kivi.cu alone
#   kvq_gpu_kivi_test_plant1  the same over a planted bug: near ties not redone [KIVI-DEV-01]
#   kvq_gpu_kivi_test_plant2  the same over a planted bug: the fast path's range condition dropped
#   kvq_gpu_kivi_bench        gpu/bench.cu over gpu/kivi/kivi.cu
#   kvq_gpu_kivi_bench_base   the same over the per-element kernels of before (KVQ_KIVI_BASELINE)
#   kvq_gpu_kivi_test_plant3  the test over a planted bug: the one-kernel dequantizer writing
#                             after a failed check [KIVI-DEV-06]
#   kvq_gpu_kivi_test_plant4, _plant5  over the direct dequantizer's planted bugs [KIVI-DEV-10]:
#                             overflow under the NaN policy not reported (4); the metadata
#                             tested for finiteness only (5)
#   kvq_gpu_kivi_test_plant6  over a planted bug of the per-channel dequantizer in slices of 32
#                             tokens [KIVI-DEV-10]: a slice reading the next slice's codes
#   kvq_gpu_kivi_bench_dq1    gpu/bench.cu over this commit's kernels with the per-channel
#                             dequantizer one thread a group at G = 64, 128 (KVQ_KIVI_DQ32=0)
#   kvq_gpu_kivi_bench_old    gpu/bench.cu over the kernels of 91b3d32 (KVQ_KIVI_CHECK4=0: the
#                             dequantize pre-pass one group a thread) [KIVI-DEV-06]
#   kvq_gpu_kivi_bench_alt    the same over the forms measured and not kept (KVQ_KIVI_DQFUSED=1:
#                             the one-kernel dequantizer [KIVI-DEV-06]; KVQ_KIVI_INFIN=1: the
#                             call's end in its kernels [KIVI-DEV-07]; KVQ_KIVI_L2KEEP=1: the
#                             checked quantizer's scratch at evict-last [KIVI-DEV-08])
#   kvq_gpu_kivi_test_alt     gpu/gpu_test.cu over those kernels
#   kvq_gpu_kivi_test_x4, kvq_gpu_kivi_bench_x4  the test and the benchmark over this commit's
#                             kernels with the per-channel dequantizer four groups a thread
#                             (KVQ_KIVI_DQ4N=1) [KIVI-DEV-06]
# (the SAGE quantizers' programs are in gpu/sage/rules.mk: gpu-quant-sage)
KIVI_DEV_HDR := gpu/kivi/kivi_dev.cuh
$(B)/gpu/kivi/kivi.o: $(KIVI_DEV_HDR)
$(B)/gpu/kivi/kivi_base.o $(B)/gpu/kivi/kivi_old.o $(B)/gpu/kivi/kivi_alt.o $(B)/gpu/kivi/kivi_x4.o \
    $(B)/gpu/kivi/kivi_plant1.o \
    $(B)/gpu/kivi/kivi_plant2.o $(B)/gpu/kivi/kivi_plant3.o $(B)/gpu/kivi/kivi_plant4.o \
    $(B)/gpu/kivi/kivi_plant5.o $(B)/gpu/kivi/kivi_plant6.o $(B)/gpu/kivi/kivi_dq1.o: \
    gpu/kivi/kivi.cu $(KIVI_DEV_HDR) $(GPU_HDR)
$(B)/gpu/kivi/kivi_base.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_BASELINE=1 -c $< -o $@
$(B)/gpu/kivi/kivi_old.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_DQFUSED=0 -DKVQ_KIVI_INFIN=0 -DKVQ_KIVI_CHECK4=0 -c $< -o $@
$(B)/gpu/kvq_gpu_kivi_bench_old: $(B)/gpu/kivi/kivi_old.o $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kivi/kivi_alt.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_DQFUSED=1 -DKVQ_KIVI_INFIN=1 -DKVQ_KIVI_L2KEEP=1 -c $< -o $@
$(B)/gpu/kvq_gpu_kivi_bench_alt: $(B)/gpu/kivi/kivi_alt.o $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kivi/kivi_x4.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_DQ4N=1 -c $< -o $@
$(B)/gpu/kvq_gpu_kivi_bench_x4: $(B)/gpu/kivi/kivi_x4.o $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_kivi_test_x4: $(B)/gpu/kivi/kivi_x4.o $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kivi/kivi_plant3.o: KIVI_PLANT_DEFS := -DKVQ_KIVI_DQFUSED=1
$(B)/gpu/kivi/kivi_plant%.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_PLANT=$* $(KIVI_PLANT_DEFS) -c $< -o $@
$(B)/gpu/kvq_gpu_kivi_test_alt: $(B)/gpu/kivi/kivi_alt.o $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_kivi_test: $(B)/gpu/kivi/kivi.o $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kivi/kivi_dq1.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_DQ32=0 -c $< -o $@
$(B)/gpu/kvq_gpu_kivi_bench_dq1: $(B)/gpu/kivi/kivi_dq1.o $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_kivi_test_plant%: $(B)/gpu/kivi/kivi_plant%.o $(B)/gpu/gpu_test.o $(GPU_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_kivi_bench: $(B)/gpu/kivi/kivi.o $(B)/gpu/bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_kivi_bench_base: $(B)/gpu/kivi/kivi_base.o $(B)/gpu/bench.o \
    $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
QUANT_DEVICE := $(B)/gpu/kvq_gpu_kivi_test $(B)/gpu/kvq_gpu_kivi_test_plant1 \
    $(B)/gpu/kvq_gpu_kivi_test_plant2 $(B)/gpu/kvq_gpu_kivi_test_plant3 $(B)/gpu/kvq_gpu_kivi_test_plant4 \
    $(B)/gpu/kvq_gpu_kivi_test_plant5 $(B)/gpu/kvq_gpu_kivi_test_plant6 $(B)/gpu/kvq_gpu_kivi_bench_dq1 \
    $(B)/gpu/kvq_gpu_kivi_bench \
    $(B)/gpu/kvq_gpu_kivi_bench_base $(B)/gpu/kvq_gpu_kivi_bench_old $(B)/gpu/kvq_gpu_kivi_bench_alt \
    $(B)/gpu/kvq_gpu_kivi_test_alt $(B)/gpu/kvq_gpu_kivi_test_x4 $(B)/gpu/kvq_gpu_kivi_bench_x4
.PHONY: gpu-quant-kivi
gpu-quant-kivi: $(QUANT_DEVICE)
GPU_TARGETS += $(QUANT_DEVICE)

# What bounds the kernels [KIVI-DEV-05] (gpu/kivi/device-quant.sh): gpu/kivi/kernel_bench.cu
# includes gpu/kivi/kivi.cu and launches each kernel alone, beside its launcher, a device copy
# and floor kernels of the same bytes.  Builds of it over other kernels, side by side:
#   kvq_gpu_kivi_kbench_prev    the kernels of before: quantize kernels without a register
#                               bound (KVQ_KIVI_QMINB=1), their rare blocks inline in the
#                               group loop (KVQ_KIVI_RAREPASS=0) with dev_code inlined
#                               (KVQ_KIVI_RARECALL=0)
#   kvq_gpu_kivi_kbench_inl     this commit's register bound, the rare blocks inline in the
#                               group loop (KVQ_KIVI_RAREPASS=0: the kernels of 19f9aec)
#   kvq_gpu_kivi_kbench_minb6   quantize kernels for 6 thread blocks an SM (80 registers)
#   kvq_gpu_kivi_kbench_minb10  for 10 (48 registers)
#   kvq_gpu_kivi_kbench_hot     the rare blocks compiled out (KVQ_KIVI_HOTCOUNT=1: wrong on
#                               near ties and rare inputs; times only): what the kernels would
#                               run at if their rare blocks cost no registers and no code
KBENCH_DEFS_prev := -DKVQ_KIVI_QMINB=1 -DKVQ_KIVI_RAREPASS=0 -DKVQ_KIVI_RARECALL=0
KBENCH_DEFS_inl := -DKVQ_KIVI_RAREPASS=0
KBENCH_DEFS_minb6 := -DKVQ_KIVI_QMINB=6
KBENCH_DEFS_minb10 := -DKVQ_KIVI_QMINB=10
KBENCH_DEFS_hot := -DKVQ_KIVI_HOTCOUNT=1
KBENCH_VARIANTS := prev inl minb6 minb10 hot
$(B)/gpu/kivi/kernel_bench.o $(KBENCH_VARIANTS:%=$(B)/gpu/kivi/kernel_bench_%.o): \
    gpu/kivi/kivi.cu $(KIVI_DEV_HDR)
$(KBENCH_VARIANTS:%=$(B)/gpu/kivi/kernel_bench_%.o): $(B)/gpu/kivi/kernel_bench_%.o: \
    gpu/kivi/kernel_bench.cu $(GPU_HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $(KBENCH_DEFS_$*) -c $< -o $@
# (the SAGE Q/K quantizers too: sage.o, sage_ds.o; kivi.cu's symbols are the bench's own)
KBENCH_LIBS := $(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o $(B)/gpu/ref/ref/common/status.o
$(B)/gpu/kivi/kernel_bench.o $(KBENCH_VARIANTS:%=$(B)/gpu/kivi/kernel_bench_%.o): include/kvq_sage.h \
    include/kvq_sage_layout.h
$(B)/gpu/kvq_gpu_kivi_kbench: $(B)/gpu/kivi/kernel_bench.o $(KBENCH_LIBS)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(KBENCH_VARIANTS:%=$(B)/gpu/kvq_gpu_kivi_kbench_%): $(B)/gpu/kvq_gpu_kivi_kbench_%: \
    $(B)/gpu/kivi/kernel_bench_%.o $(KBENCH_LIBS)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
QUANT_PROF := $(B)/gpu/kvq_gpu_kivi_kbench $(KBENCH_VARIANTS:%=$(B)/gpu/kvq_gpu_kivi_kbench_%)
.PHONY: gpu-quant-prof
gpu-quant-prof: $(QUANT_PROF)
GPU_TARGETS += $(QUANT_PROF)
