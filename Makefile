# The two commands of the quick start, plus the build and the benchmarks.
#   make demo   install what is missing, build, run the daemon and simulated robots, print a summary
#   make test   install what is missing, build, run every test (ctest)
#   make bench  the benchmark binaries (and the CPU engine beside PyTorch), figures for docs/benchmarks.md
# make test also builds the CUDA emulation twice (the CUDA engine and HRR compiled as C++ against
# gpu/emu): build-emu under AddressSanitizer and UBSan, build-emu-tsan under ThreadSanitizer (the
# race checker), and runs their tests (ctest label cuda-emu).
BUILD ?= build
# Debian's python3 packages (python3-torch for make bench) install for /usr/bin/python3, which a
# python3 on PATH (pyenv, a venv) may not see.
DEBIAN_PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)
EMU_BUILD ?= $(BUILD)-emu
TSAN_BUILD ?= $(BUILD)-emu-tsan
JOBS ?= 2
DEMO_SECONDS ?= 120
DEMO_ROBOTS ?= 4
DEMO_PORT ?= 50051

.PHONY: all deps build build-emu build-emu-tsan demo test bench clean

all: build

deps:
	./deploy/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

# Only what the cuda-emu tests run: the engine, the HRR backend, their tests, the daemon.
build-emu: deps
	cmake -S . -B $(EMU_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIELDBRAIN_CUDA_EMU=ON \
	  -DFIELDBRAIN_SANITIZE=address,undefined
	cmake --build $(EMU_BUILD) -j$(JOBS) --target cuda_emu_tests

build-emu-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIELDBRAIN_CUDA_EMU=ON \
	  -DFIELDBRAIN_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target cuda_emu_tests

demo: build
	BUILD=$(BUILD) DEMO_SECONDS=$(DEMO_SECONDS) DEMO_ROBOTS=$(DEMO_ROBOTS) DEMO_PORT=$(DEMO_PORT) ./deploy/demo.sh

test: build build-emu build-emu-tsan
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	cd $(EMU_BUILD) && ctest --output-on-failure -j$(JOBS) -L cuda-emu
	cd $(TSAN_BUILD) && ctest --output-on-failure -j$(JOBS) -L cuda-emu

bench: build
	./deploy/install-deps.sh --bench
	$(BUILD)/tests/bench/cpu_cycle_bench
	$(DEBIAN_PYTHON) tests/bench/cpu_vs_torch.py --bench $(BUILD)/tests/bench/cpu_cycle_bench
	$(BUILD)/tests/bench/hrr_bench
	$(BUILD)/tests/bench/loopback_bench

clean:
	rm -rf $(BUILD) $(EMU_BUILD) $(TSAN_BUILD)
