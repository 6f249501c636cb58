# The two commands of the README. Everything else is CMake.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap build run test asan tsan fuzz clean

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

# The daemons' threaded parts (gRPC server and streams, the DB pool, the
# agent's log reader, the scheduler's lease heartbeat) under ThreadSanitizer.
# Every report fails, with the suppressions of tests/tsan.supp (races seen
# only through Debian's uninstrumented gRPC and abseil).
TSAN_TESTS ?= ^(grpc\.|logs\.|agent\.channel|agent\.outage|api\.jobs$$|sched\.failover|unit\.agent\.logs|plan\.dryrun|api\.events$$)
tsan: bootstrap
	cmake -S . -B build-tsan -DMUSTER_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-tsan -j $(JOBS)
	rm -rf build-tsan/tsan-reports && mkdir -p build-tsan/tsan-reports
	cd build-tsan && TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 \
		log_path=$(abspath build-tsan)/tsan-reports/report suppressions=$(abspath tests/tsan.supp)" \
		ctest --output-on-failure -j $(JOBS) --timeout 600 -R '$(TSAN_TESTS)'
	@if [ -n "$$(ls build-tsan/tsan-reports)" ]; then \
		cat build-tsan/tsan-reports/*; \
		echo "make tsan: ThreadSanitizer reports above (build-tsan/tsan-reports)" >&2; exit 1; fi

# Every libFuzzer driver (clang, ASan+UBSan) for FUZZ_SECONDS each.
fuzz:
	./scripts/fuzz-run build-fuzz

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
