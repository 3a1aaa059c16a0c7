# gpu/sage/rules.mk -- the SAGE family's GPU programs (included by the Makefile, which
# finds this file by rule: gpu/*/rules.mk).
# GPU SAGE (gpu/sage/: kernels sage.cu and sage_ds.cu, test, benchmark, FP8
# conversion matrix, exhaustive FP8 sweep)
SAGE_HDR := include/kvq_sage.h include/kvq_sage_layout.h include/kvq_fp8.h
$(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o: gpu/sage/sage_common.cuh
# the V quantizer writes V~ in the FA3 core's layout (sage_instr.cuh's wg_off, vt_word_off) [SAGE-DEV-15]
$(B)/gpu/sage/sage.o: gpu/sage/sage_instr.cuh
$(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o $(B)/gpu/sage/sage_test.o $(B)/gpu/sage/sage_bench.o \
    $(B)/gpu/sage/fp8_matrix.o $(B)/gpu/sage/fp8_sweep.o: $(SAGE_HDR)
SAGE_REF_OBJ := $(B)/gpu/ref/ref/fast/sage.o $(B)/gpu/ref/ref/common/fp8.o
# sage_pv on the device (gpu/sage/sage_pv.cu, a kernel unit: the FP8 MMA instructions of
# gpu/sage/mma_dev.cuh) checks its arguments by ref/fast/sage_attn.c's kvq_sage_pv_check;
# the subject's SAGE entries (gpu/sage/entries.cu) link it (prerequisites: the rule takes $^)
$(B)/gpu/sage/sage_pv.o: gpu/sage/mma_dev.cuh include/kvq_mma.h $(SAGE_HDR)
$(B)/gpu/sage/entries.o: $(SAGE_HDR) include/kvq_sage_attn.h
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/ref/ref/fast/sage_attn.o $(SAGE_REF_OBJ)
# sage_attention_mha checks the input format by ref/fast/sage_attn.c's kvq_sage_in_exact
# (ref/common/fbits.c), whose file also holds the binary16 reading of a wrong subject
# (kvq_round_f16, ref/fast/kivi.c)
$(B)/gpu/libkvq_subject_gpu.so: $(B)/gpu/ref/ref/common/fbits.o $(B)/gpu/ref/ref/fast/kivi.o
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
# the wgmma accumulator probe through CuTe's SM90 atoms (FP8 -> f32 against the models,
# INT8 -> s32 against the exact sum; judged on the device): the CUTLASS/CuTe headers
# (CUTLASS_INC, cutlass-check in the Makefile); CuTe's headers are not held to kvq's warnings
$(B)/gpu/sage/wgmma_probe.o: gpu/sage/wgmma_probe.cu include/kvq_mma.h $(GPU_HDR) | cutlass-check
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -isystem $(CUTLASS_INC) --expt-relaxed-constexpr -c $< -o $@
$(B)/gpu/kvq_sage_wgmma_probe: $(B)/gpu/sage/wgmma_probe.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
GPU_TARGETS += $(B)/gpu/kvq_sage_wgmma_probe
# the QK stage on INT8 wgmma through CuTe (TMA, one warpgroup) against the current QK loop
# and the host, bit for bit, and timed side by side (no ref/ objects: the score is one fmaf)
$(B)/gpu/sage/qk_test.o: gpu/sage/qk_test.cu $(GPU_HDR) | cutlass-check
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -isystem $(CUTLASS_INC) --expt-relaxed-constexpr -c $< -o $@
$(B)/gpu/kvq_sage_qk_test: $(B)/gpu/sage/qk_test.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
GPU_TARGETS += $(B)/gpu/kvq_sage_qk_test
# the attention core in FlashAttention-3's structure (gpu/sage/sage_fa3.cu, a kernel unit of
# GPU_OBJ, CuTe): with the CUTLASS/CuTe headers when CUTLASS_INC is found (cutlass-check
# stops on a wrong version), else built as an absent core (KVQ_SAGE_NO_CUTE) and
# kvq_cuda_sage_attn_core keeps the warpgroup core; the planted build skips a buffer flush
$(B)/gpu/sage/sage_fa3.o $(B)/gpu/sage/sage_fa3_plant.o: gpu/sage/sage_fa3.cu gpu/sage/sage_fa3.h gpu/sage/sage_instr.cuh $(GPU_HDR) \
    $(SAGE_HDR) include/kvq_sage_attn.h $(if $(CUTLASS_INC),| cutlass-check)
$(B)/gpu/sage/sage_fa3.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) $(if $(CUTLASS_INC),-isystem $(CUTLASS_INC) --expt-relaxed-constexpr,-DKVQ_SAGE_NO_CUTE=1) -c $< -o $@
$(B)/gpu/sage/sage_fa3_plant.o: | cutlass-check
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -isystem $(CUTLASS_INC) --expt-relaxed-constexpr -DKVQ_SAGE_FA3_PLANT=1 -c $< -o $@
# the attention core and pipeline (gpu/sage/sage_attn.cu, a kernel unit of GPU_OBJ), its
# device test (bitwise against ref/fast/sage.c and the wgmma model; OpenMP host checks) and
# the shared library a benchmark loads (kvq_cuda_sage_attn, _workspace, _core, ...)
$(B)/gpu/sage/sage_attn.o: $(SAGE_HDR) include/kvq_sage_attn.h gpu/sage/sage_common.cuh gpu/sage/sage_instr.cuh gpu/sage/sage_fa3.h
$(B)/gpu/sage/attn_test.o: $(SAGE_HDR) include/kvq_sage_attn.h include/kvq_mma.h gpu/sage/vt_ref.h
$(B)/gpu/sage/attn_test.o: NVFLAGS += -Xcompiler -fopenmp
$(B)/gpu/kvq_gpu_sage_attn_test: $(GPU_OBJ) $(B)/gpu/sage/attn_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ) \
    $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) -Xcompiler -fopenmp $^ -o $@ -lmpfr -lgmp -lm -lgomp
# the device's ex2.approx.ftz.f32 on every non-positive binary32 argument ([TR-EX2])
$(B)/gpu/kvq_sage_ex2_sweep: $(B)/gpu/sage/ex2_sweep.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/libkvq_sage_attn.so: $(GPU_OBJ) $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) -shared $^ -o $@ -lm
GPU_TARGETS += $(B)/gpu/kvq_gpu_sage_test $(B)/gpu/kvq_sage_bench $(B)/gpu/kvq_sage_fp8_matrix \
               $(B)/gpu/kvq_sage_fp8_sweep $(B)/gpu/kvq_sage_mma_probe \
               $(B)/gpu/kvq_gpu_sage_attn_test $(B)/gpu/libkvq_sage_attn.so $(B)/gpu/kvq_sage_ex2_sweep

# SAGE's part of `make gpu-test`: the device test, the attention test, the ex2 sweep
# (exit 77: SKIPPED, not a pass) and a confirmation run of the accumulator probe.
GPU_TESTS += gpu-check-sage
.PHONY: gpu-check-sage
gpu-check-sage: $(B)/gpu/kvq_gpu_sage_test $(B)/gpu/kvq_gpu_sage_attn_test $(B)/gpu/kvq_sage_ex2_sweep \
                $(B)/gpu/kvq_sage_mma_probe
	$(B)/gpu/kvq_gpu_sage_test
	@rc=0; $(B)/gpu/kvq_gpu_sage_attn_test || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "gpu-test: kvq_gpu_sage_attn_test SKIPPED (exit 77), not a pass"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	@rc=0; $(B)/gpu/kvq_sage_ex2_sweep || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "gpu-test: kvq_sage_ex2_sweep SKIPPED (exit 77), not a pass"; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi
	$(B)/gpu/kvq_sage_mma_probe --confirm --tiles 20000


# the benchmarks' timing (CK, time_med over cold-L2 reps)
$(B)/gpu/sage/sage_bench.o: gpu/bench_time.cuh

# The SAGE quantizers' own device programs, linking only what they need (sage.cu, sage_ds.cu
# and kivi.cu's device check), for gpu/kivi/device-quant.sh:
#   kvq_gpu_sage_qtest    gpu/sage/sage_test.cu      kvq_sage_qbench   gpu/sage/sage_bench.cu
#   kvq_sage_qbench_base  the benchmark over sage.cu's Q/K codes of before (KVQ_SAGE_BASELINE)
#   kvq_gpu_sage_qtest_plant1  the test over a planted bug: near ties not redone [SAGE-DEV-10]
#   kvq_gpu_sage_qtest_plant2  the same: a NaN input's error dropped (the maxima pass it over) [SAGE-DEV-14]
#   kvq_gpu_sage_qtest_plant4  the same: the dequantizer's last bad scale decides the status [SAGE-DEV-18]
#   kvq_gpu_sage_qtest_plant5  the same: the dequantizer's overflow decided by the scale alone [SAGE-DEV-18]
#   kvq_sage_qbench_old   the benchmark over the Q/K kernel of 4e49489 (KVQ_SAGE_QK2=0) [SAGE-DEV-14]
#   kvq_sage_qbench_reg   the same over this commit's, its input in registers (KVQ_SAGE_SMEM=0)
#   kvq_gpu_sage_qtest_bfly, kvq_sage_qbench_bfly  the test and the benchmark over this commit's
#                         with Q's thread-granularity maxima by a reduce-scatter (KVQ_SAGE_BFLY=1)
QUANT_SAGE_OBJ := $(B)/gpu/sage/sage_ds.o $(B)/gpu/kivi/kivi.o
$(B)/gpu/kvq_gpu_sage_qtest: $(B)/gpu/sage/sage.o $(QUANT_SAGE_OBJ) $(B)/gpu/sage/sage_test.o \
    $(GPU_REF_OBJ) $(SAGE_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_sage_qbench: $(B)/gpu/sage/sage.o $(QUANT_SAGE_OBJ) $(B)/gpu/sage/sage_bench.o \
    $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/sage/sage_base.o $(B)/gpu/sage/sage_old.o $(B)/gpu/sage/sage_reg.o $(B)/gpu/sage/sage_bfly.o \
    $(B)/gpu/sage/sage_plant1.o $(B)/gpu/sage/sage_plant3.o $(B)/gpu/sage/sage_plant4.o \
    $(B)/gpu/sage/sage_plant5.o $(B)/gpu/sage/sage_plant2.o: gpu/sage/sage.cu gpu/sage/sage_common.cuh gpu/sage/sage_instr.cuh \
    $(GPU_HDR) $(SAGE_HDR)
$(B)/gpu/sage/sage_base.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_BASELINE=1 -c $< -o $@
$(B)/gpu/kvq_sage_qbench_base: $(B)/gpu/sage/sage_base.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/sage/sage_old.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_QK2=0 -c $< -o $@
$(B)/gpu/kvq_sage_qbench_old: $(B)/gpu/sage/sage_old.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/sage/sage_reg.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_SMEM=0 -c $< -o $@
$(B)/gpu/kvq_sage_qbench_reg: $(B)/gpu/sage/sage_reg.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/sage/sage_bfly.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_BFLY=1 -c $< -o $@
$(B)/gpu/kvq_sage_qbench_bfly: $(B)/gpu/sage/sage_bfly.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_bench.o $(B)/gpu/ref/ref/common/status.o
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_sage_qtest_bfly: $(B)/gpu/sage/sage_bfly.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/sage/sage_plant%.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_PLANT=$* -c $< -o $@
$(B)/gpu/kvq_gpu_sage_qtest_plant%: $(B)/gpu/sage/sage_plant%.o $(QUANT_SAGE_OBJ) \
    $(B)/gpu/sage/sage_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
QUANT_SAGE_DEVICE := $(B)/gpu/kvq_gpu_sage_qtest $(B)/gpu/kvq_gpu_sage_qtest_plant1 \
    $(B)/gpu/kvq_gpu_sage_qtest_plant2 $(B)/gpu/kvq_gpu_sage_qtest_plant4 $(B)/gpu/kvq_gpu_sage_qtest_plant5 \
    $(B)/gpu/kvq_sage_qbench $(B)/gpu/kvq_sage_qbench_base \
    $(B)/gpu/kvq_sage_qbench_old $(B)/gpu/kvq_sage_qbench_reg $(B)/gpu/kvq_sage_qbench_bfly \
    $(B)/gpu/kvq_gpu_sage_qtest_bfly
.PHONY: gpu-quant-sage
gpu-quant-sage: $(QUANT_SAGE_DEVICE)
GPU_TARGETS += $(QUANT_SAGE_DEVICE)

# Static instruction counts [KIVI-DEV-03] [SAGE-DEV-10]: the kernels with their rare blocks
# compiled out (KVQ_*_HOTCOUNT), this commit's and those of before, through
# gpu/kivi/sass-count.sh (cuobjdump on PATH); the table of spec/kivi.md, "CUDA kernels".
# (*_old_hot: the kernels of 91b3d32 and 4e49489, KVQ_KIVI_DQFUSED=0 KVQ_KIVI_INFIN=0,
# KVQ_SAGE_QK2=0 [KIVI-DEV-06] [SAGE-DEV-14])
QUANT_HOT := $(B)/gpu/kivi/kivi_hot.o $(B)/gpu/kivi/kivi_old_hot.o $(B)/gpu/kivi/kivi_base_hot.o \
    $(B)/gpu/sage/sage_hot.o $(B)/gpu/sage/sage_old_hot.o $(B)/gpu/sage/sage_base_hot.o
$(B)/gpu/kivi/kivi_hot.o $(B)/gpu/kivi/kivi_old_hot.o $(B)/gpu/kivi/kivi_base_hot.o: gpu/kivi/kivi.cu \
    $(KIVI_DEV_HDR) $(GPU_HDR)
$(B)/gpu/sage/sage_hot.o $(B)/gpu/sage/sage_old_hot.o $(B)/gpu/sage/sage_base_hot.o: gpu/sage/sage.cu \
    gpu/sage/sage_common.cuh $(GPU_HDR) $(SAGE_HDR)
$(B)/gpu/kivi/kivi_old_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_HOTCOUNT=1 -DKVQ_KIVI_DQFUSED=0 -DKVQ_KIVI_INFIN=0 -c $< -o $@
$(B)/gpu/sage/sage_old_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_HOTCOUNT=1 -DKVQ_SAGE_QK2=0 -c $< -o $@
$(B)/gpu/kivi/kivi_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_HOTCOUNT=1 -c $< -o $@
$(B)/gpu/kivi/kivi_base_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_KIVI_HOTCOUNT=1 -DKVQ_KIVI_BASELINE=1 -c $< -o $@
$(B)/gpu/sage/sage_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_HOTCOUNT=1 -c $< -o $@
$(B)/gpu/sage/sage_base_hot.o:
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_HOTCOUNT=1 -DKVQ_SAGE_BASELINE=1 -c $< -o $@
.PHONY: quant-sass
quant-sass: $(QUANT_HOT)
	bash gpu/kivi/sass-count.sh $(QUANT_HOT)

# The FlashAttention-3-structured core against the warpgroup core, bit for bit, and the two
# timed side by side (gpu/sage/fa3_test.cu, no MPFR); the planted build links the core with a
# buffer flush skipped and the V quantizer with V~'s quarters swapped (KVQ_SAGE_PLANT=3,
# [SAGE-DEV-15]): both must fail.  gpu/sage/device-fa3.sh and device-vt.sh run them on the device.
FA3_TEST_OBJ := $(B)/gpu/sage/sage_attn.o $(B)/gpu/sage/sage_ds.o $(B)/gpu/ref/ref/common/status.o
$(B)/gpu/sage/fa3_test.o: $(SAGE_HDR) include/kvq_sage_attn.h gpu/sage/sage_instr.cuh gpu/sage/vt_ref.h gpu/sage/sage_fa3.h
$(B)/gpu/kvq_sage_fa3_test: $(B)/gpu/sage/fa3_test.o $(B)/gpu/sage/sage_fa3.o $(B)/gpu/sage/sage.o $(FA3_TEST_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_sage_fa3_test_plant: $(B)/gpu/sage/fa3_test.o $(B)/gpu/sage/sage_fa3_plant.o \
    $(B)/gpu/sage/sage_plant3.o $(FA3_TEST_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
GPU_TARGETS += $(B)/gpu/kvq_sage_fa3_test $(B)/gpu/kvq_sage_fa3_test_plant
# Timing builds of the FA3 core with part of level 5's per-block work removed
# (KVQ_SAGE_FA3_ABLATE 1: the softmax, the rescale and the flush; 2: the rescale and the
# flush, at levels 5 and 6), wrong outputs by design, timed beside the real levels [SAGE-DEV-21]:
# `make gpu-sage-ablate`, run by gpu/sage/device-ablate.sh (not part of `make gpu`).
$(B)/gpu/sage/sage_fa3_abl%.o: gpu/sage/sage_fa3.cu gpu/sage/sage_fa3.h gpu/sage/sage_instr.cuh $(GPU_HDR) \
    $(SAGE_HDR) include/kvq_sage_attn.h | cutlass-check
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -isystem $(CUTLASS_INC) --expt-relaxed-constexpr -DKVQ_SAGE_FA3_ABLATE=$* -c $< -o $@
$(B)/gpu/kvq_sage_fa3_test_abl%: $(B)/gpu/sage/fa3_test.o $(B)/gpu/sage/sage_fa3_abl%.o $(B)/gpu/sage/sage.o \
    $(FA3_TEST_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
.PHONY: gpu-sage-ablate
gpu-sage-ablate: $(B)/gpu/kvq_sage_fa3_test $(B)/gpu/kvq_sage_fa3_test_abl1 $(B)/gpu/kvq_sage_fa3_test_abl2

# The stage kernels of the attention pipeline [SAGE-DEV-16] (smoothing's mean by cp.async token
# tiles, its subtraction by float4, dS tiled in shared memory): the planted build plants the
# mean's token order (tokens 1 and 2 of a segment swapped) and dS's channel order (the last two
# swapped), each alone by KVQ_SAGE_STG_PLANT=1 or 2 at run time (3 or unset: both); the stage
# test (kvq_gpu_sage_qtest_stgplant, no MPFR) and the attention test
# (kvq_gpu_sage_attn_test_plant, MPFR) over it must FAIL.  gpu/sage/device-stg.sh runs them.
$(B)/gpu/sage/sage_stgplant.o: gpu/sage/sage.cu gpu/sage/sage_common.cuh gpu/sage/sage_instr.cuh \
    $(GPU_HDR) $(SAGE_HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_STG_PLANT=1 -c $< -o $@
$(B)/gpu/sage/sage_ds_stgplant.o: gpu/sage/sage_ds.cu gpu/sage/sage_common.cuh $(GPU_HDR) $(SAGE_HDR)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_STG_PLANT=1 -c $< -o $@
STG_PLANT_OBJ := $(B)/gpu/sage/sage_stgplant.o $(B)/gpu/sage/sage_ds_stgplant.o
$(B)/gpu/kvq_gpu_sage_qtest_stgplant: $(STG_PLANT_OBJ) $(B)/gpu/kivi/kivi.o $(B)/gpu/sage/sage_test.o \
    $(GPU_REF_OBJ) $(SAGE_REF_OBJ)
	$(NVCC) $(NVFLAGS) $^ -o $@ -lm
$(B)/gpu/kvq_gpu_sage_attn_test_plant: $(filter-out $(B)/gpu/sage/sage.o $(B)/gpu/sage/sage_ds.o,$(GPU_OBJ)) \
    $(STG_PLANT_OBJ) $(B)/gpu/sage/attn_test.o $(GPU_REF_OBJ) $(SAGE_REF_OBJ) $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) -Xcompiler -fopenmp $^ -o $@ -lmpfr -lgmp -lm -lgomp
GPU_TARGETS += $(B)/gpu/kvq_gpu_sage_qtest_stgplant $(B)/gpu/kvq_gpu_sage_attn_test_plant

# The grouped-KV entry point [SAGE-DEV-17]: the planted build has both cores read KV head
# h % kv_heads (the heads interleaved, [SAGE-MHA-01]'s other grouping) in place of
# h / (heads / kv_heads); the attention test's grouped cases over it (--gqa) must FAIL.
# gpu/sage/device-gqa.sh runs it.
$(B)/gpu/sage/sage_attn_gqaplant.o: gpu/sage/sage_attn.cu $(GPU_HDR) $(SAGE_HDR) include/kvq_sage_attn.h \
    gpu/sage/sage_common.cuh gpu/sage/sage_instr.cuh gpu/sage/sage_fa3.h
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -DKVQ_SAGE_GQA_PLANT=1 -c $< -o $@
$(B)/gpu/sage/sage_fa3_gqaplant.o: gpu/sage/sage_fa3.cu gpu/sage/sage_fa3.h gpu/sage/sage_instr.cuh $(GPU_HDR) \
    $(SAGE_HDR) include/kvq_sage_attn.h | cutlass-check
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -isystem $(CUTLASS_INC) --expt-relaxed-constexpr -DKVQ_SAGE_GQA_PLANT=1 -c $< -o $@
$(B)/gpu/kvq_gpu_sage_attn_test_gqaplant: $(filter-out $(B)/gpu/sage/sage_attn.o $(B)/gpu/sage/sage_fa3.o,$(GPU_OBJ)) \
    $(B)/gpu/sage/sage_attn_gqaplant.o $(B)/gpu/sage/sage_fa3_gqaplant.o $(B)/gpu/sage/attn_test.o $(GPU_REF_OBJ) \
    $(SAGE_REF_OBJ) $(B)/rel/libkvq.a
	$(NVCC) $(NVFLAGS) -Xcompiler -fopenmp $^ -o $@ -lmpfr -lgmp -lm -lgomp
GPU_TARGETS += $(B)/gpu/kvq_gpu_sage_attn_test_gqaplant
