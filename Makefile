# The two commands of the quick start, plus the build and the benchmarks.
#   make demo   install what is missing, build, run the daemon and simulated robots, print a summary
#   make test   install what is missing, build, run every test (ctest)
#   make bench  the benchmark binaries, figures for docs/benchmarks.md
BUILD ?= build
JOBS ?= 2
DEMO_SECONDS ?= 120
DEMO_ROBOTS ?= 4
DEMO_PORT ?= 50051

.PHONY: all deps build demo test bench clean

all: build

deps:
	./deploy/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	BUILD=$(BUILD) DEMO_SECONDS=$(DEMO_SECONDS) DEMO_ROBOTS=$(DEMO_ROBOTS) DEMO_PORT=$(DEMO_PORT) ./deploy/demo.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

bench: build
	$(BUILD)/tests/bench/cpu_cycle_bench
	$(BUILD)/tests/bench/hrr_bench
	$(BUILD)/tests/bench/loopback_bench

clean:
	rm -rf $(BUILD)
