# runtime/runtime.mk - the GPU runner wprun (included by the top Makefile).
#
#   bin/wprun                    from runtime/*.c (+ runtime/*.cu when nvcc is
#                                present: sm_80, sm_87, sm_90a; cudart + cuBLAS)
#   build/unit/test_runtime_cpu  the CPU reference tests (tests/runtime/test_cpu.c)
#   build/unit/test_runtime_emu  the CUDA kernels' own source run on the host, one
#                                thread per CUDA thread (tests/runtime/test_emu.cpp,
#                                simt.h), checked against the CPU reference; no nvcc
#   build/tools/wprun-fault      wprun, CPU-only, with the test faults of cpu.c
#                                (-DWR_TEST_FAULT): tests/runtime.bats sees --verify
#                                catch each
#
# Without nvcc (on PATH or at /usr/local/cuda/bin/nvcc) wprun is built
# CPU-only with -DWPACK_NO_CUDA. WPACK_NO_CUDA=1 forces that.

NVCC ?= $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
ifneq ($(WPACK_NO_CUDA),)
NVCC :=
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
# sm_87 (Jetson Orin) has sm_80's instruction set: one compute_80 PTX gives both
# SASS, so cicc (most of the build) runs twice, not three times.
CUDA_ARCHS ?= -gencode 'arch=compute_80,code=[sm_80,sm_87]' -gencode arch=compute_90a,code=sm_90a
# Host code: -Werror; device code: every nvcc warning an error too. --threads 0
# compiles the architectures side by side (the build's longest step: gpu.cu,
# about 4 CPU-minutes an architecture).
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo $(CUDA_ARCHS) --threads 0 --Werror all-warnings \
             -Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Werror

RT_SRC  := $(sort $(wildcard runtime/*.c))
RT_HDR  := $(wildcard runtime/*.h) $(wildcard runtime/*.cuh) $(wildcard lib/*.h)
RT_CU   := $(sort $(wildcard runtime/*.cu))
ifneq ($(NVCC),)
RT_MODE := cuda
RT_DEFS :=
RT_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++ -ldl -lrt
RT_CUOBJ:= $(RT_CU:runtime/%.cu=build/runtime-cuda/%.o)
else
RT_MODE := cpu
RT_DEFS := -DWPACK_NO_CUDA
RT_LIBS :=
RT_CUOBJ:=
endif
RT_DIR  := build/runtime-$(RT_MODE)
RT_OBJ  := $(RT_SRC:runtime/%.c=$(RT_DIR)/%.o)
RT_REF  := $(filter-out $(RT_DIR)/wprun.o,$(RT_OBJ))

.PHONY: runtime
runtime: bin/wprun

$(RT_DIR)/%.o: runtime/%.c $(RT_HDR) | $(RT_DIR)
	$(CC) $(WFLAGS) -Werror $(CPPFLAGS) -Iruntime $(RT_DEFS) $(CFLAGS) -c -o $@ $<

build/runtime-cuda/%.o: runtime/%.cu $(RT_HDR) | build/runtime-cuda
	$(NVCC) $(NVCCFLAGS) -Ilib -Iruntime -c -o $@ $<

# Relink when the build switches between the CUDA and the CPU-only mode.
RT_STAMP := build/runtime-mode-$(RT_MODE)
$(RT_STAMP): | $(RT_DIR)
	rm -f build/runtime-mode-* && touch $@

bin/wprun: $(RT_OBJ) $(RT_CUOBJ) $(RT_STAMP) lib/libwpack.a | bin
	$(CC) $(CFLAGS) -o $@ $(RT_OBJ) $(RT_CUOBJ) lib/libwpack.a $(RT_LIBS) $(LDLIBS)

build/unit/test_runtime_cpu: tests/runtime/test_cpu.c $(RT_REF) $(RT_HDR) tests/unit/tap.h lib/libwpack.a | build/unit
	$(CC) $(WFLAGS) $(CPPFLAGS) -Iruntime -Itests/unit $(CFLAGS) -o $@ $< $(RT_REF) lib/libwpack.a $(LDLIBS)

# C++20 for std::barrier; kernels.cuh's #pragma unroll means nothing to the host compiler.
build/unit/test_runtime_emu: tests/runtime/test_emu.cpp tests/runtime/simt.h $(RT_REF) $(RT_HDR) tests/unit/tap.h lib/libwpack.a | build/unit
	$(CXX) -std=c++20 -O1 -g -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -pthread $(CPPFLAGS) -Iruntime -Itests/unit \
	  -o $@ $< $(RT_REF) lib/libwpack.a $(LDLIBS)

RT_FAULT_OBJ := $(RT_SRC:runtime/%.c=build/runtime-fault/%.o)
build/runtime-fault/%.o: runtime/%.c $(RT_HDR) | build/runtime-fault
	$(CC) $(WFLAGS) -Werror $(CPPFLAGS) -Iruntime -DWPACK_NO_CUDA -DWR_TEST_FAULT $(CFLAGS) -c -o $@ $<

build/tools/wprun-fault: $(RT_FAULT_OBJ) lib/libwpack.a | build/tools
	$(CC) $(CFLAGS) -o $@ $(RT_FAULT_OBJ) lib/libwpack.a $(LDLIBS)

build/runtime-cpu build/runtime-cuda build/runtime-fault:
	mkdir -p $@

tests: build/unit/test_runtime_cpu build/unit/test_runtime_emu build/tools/wprun-fault
