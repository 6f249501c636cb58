# The two commands of the README. Everything else is CMake.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap build run test asan clean

all: build

bootstrap:
	@./scripts/bootstrap

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: bootstrap $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Runs muster for real on the embedded default: a private PostgreSQL in
# .muster/, the API, the schedulers and fake-GPU agents. Ctrl-C stops it all.
run: build
	./scripts/dev-cluster $(BUILD)

# Every skip is listed after the run; under CI=true one that
# tests/skips.allow does not allow fails (scripts/check-skips).
test: build
	rm -f $(BUILD)/skips.log $(BUILD)/ctest-junit.xml
	cd $(BUILD) && MUSTER_SKIP_LOG=$(abspath $(BUILD))/skips.log \
		ctest --output-on-failure -j $(JOBS) --timeout 600 --output-junit ctest-junit.xml
	./scripts/check-skips $(BUILD)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DMUSTER_ASAN=ON -DMUSTER_UBSAN=ON -DCMAKE_BUILD_TYPE=Debug"

clean:
	rm -rf $(BUILD) build-asan
