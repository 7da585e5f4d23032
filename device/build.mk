# wotbench-device: included by the top-level Makefile (variables live there).

DEV_SRCS := device/main.c device/cli.c device/cpulist.c device/resources.c device/registry.c \
            device/wire.c device/tx.c device/dedup.c device/sepresp.c device/service.c \
            device/workers.c device/loop.c device/dispatch.c device/counters.c \
            device/hist.c device/notify.c device/observe.c device/buildinfo.c
DEV_HDRS := $(wildcard device/*.h)
DEV_OBJS := $(patsubst device/%.c,$(BUILD)/obj/device/%.o,$(DEV_SRCS))
DEV_ASAN_OBJS := $(patsubst device/%.c,$(BUILD)/obj/device/asan/%.o,$(DEV_SRCS))

$(BUILD)/obj/device/%.o: device/%.c $(DEV_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -I$(COAP_INC) -c $< -o $@

$(BUILD)/obj/device/asan/%.o: device/%.c $(DEV_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -I$(COAP_INC) -c $< -o $@

# The static binary alone links the numeric-only resolver (noresolv.c:
# keeps glibc's getaddrinfo.o, and its link warning, out); the ASan build is
# dynamic and keeps glibc's.
DEV_LDFLAGS := $(STATIC_LDFLAGS) $(COAP_LIB) -lm
DEV_ASAN_LDFLAGS := -pthread $(COAP_LIB) -lm
$(BIN)/wotbench-device: $(DEV_OBJS) $(BUILD)/obj/device/noresolv.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $^ $(DEV_LDFLAGS)

$(BUILD)/asan/wotbench-device: $(DEV_ASAN_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -o $@ $^ $(DEV_ASAN_LDFLAGS)

# --build-info (device/buildinfo.c): the flags above and the git state, as
# macros of this one object (Makefile, BI_STAMP).
BI_DEV := $(call bi_defs,$(ALL_CFLAGS),$(DEV_LDFLAGS))
BI_DEV_ASAN := $(call bi_defs,$(CSTD) $(CWARN) $(SAN_FLAGS),$(DEV_ASAN_LDFLAGS))
$(BUILD)/obj/device/buildinfo.o: device/buildinfo.c device/buildinfo.h $(BI_STAMP)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(BI_DEV) -c $< -o $@

$(BUILD)/obj/device/asan/buildinfo.o: device/buildinfo.c device/buildinfo.h $(BI_STAMP)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) $(BI_DEV_ASAN) -c $< -o $@

# libFuzzer harnesses: the resource CSV parser, the request path (parse +
# response build) and the --cpus LIST parser are the parsers of outside input.
FUZZERS += $(BUILD)/fuzz/fuzz-device-resources $(BUILD)/fuzz/fuzz-device-request \
           $(BUILD)/fuzz/fuzz-device-cpulist

$(BUILD)/fuzz/fuzz-device-resources: device/fuzz/fuzz_resources.c device/resources.c device/notify.c $(DEV_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -Idevice -o $@ device/fuzz/fuzz_resources.c device/resources.c \
	  device/notify.c -lm

$(BUILD)/fuzz/fuzz-device-request: device/fuzz/fuzz_request.c device/wire.c device/tx.c device/hist.c device/registry.c device/resources.c device/notify.c $(DEV_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -Idevice -I$(COAP_INC) -o $@ device/fuzz/fuzz_request.c \
	  device/wire.c device/tx.c device/hist.c device/registry.c device/resources.c device/notify.c \
	  -pthread $(COAP_LIB) -lm

$(BUILD)/fuzz/fuzz-device-cpulist: device/fuzz/fuzz_cpulist.c device/cpulist.c device/cpulist.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -Idevice -o $@ device/fuzz/fuzz_cpulist.c device/cpulist.c

# Load tools of the device benchmark: devload (closed loop, a window of
# requests in flight) and devrate (open loop at one fixed rate).
$(BIN)/devload: device/bench/devload.c device/bench/benchreq.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $<

$(BIN)/devrate: device/bench/devrate.c device/bench/benchreq.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $<

# The device at zero service time: capacity per worker-thread count
# (closed loop, open-loop steps) and as the GE sees it at 200k/250k req/s
# (README, "Benchmark"); JSON to build/bench/device.json.
.PHONY: bench-device
bench-device: $(BIN)/wotbench-device $(BIN)/devload $(BIN)/devrate $(BIN)/wotbench-ge venv
	$(Q)$(PY) device/bench/bench_device.py $(BENCH_DEVICE_ARGS)

# wotbench-hog: the noisy neighbour of `interference:` (docs/interference.md),
# shipped in the device image; built with `make build` / `make build-asan`.
HOG_SRCS := device/hog.c device/hog_cli.c device/hog_work.c
HOG_HDRS := device/hog_cli.h device/hog_work.h
HOG_OBJS := $(patsubst device/%.c,$(BUILD)/obj/device/%.o,$(HOG_SRCS))
HOG_ASAN_OBJS := $(patsubst device/%.c,$(BUILD)/obj/device/asan/%.o,$(HOG_SRCS))

$(HOG_OBJS) $(HOG_ASAN_OBJS): $(HOG_HDRS)

$(BIN)/wotbench-hog: $(HOG_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $^ $(STATIC_LDFLAGS)

$(BUILD)/asan/wotbench-hog: $(HOG_ASAN_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -o $@ $^ -pthread

build: $(BIN)/wotbench-hog
build-asan: $(BUILD)/asan/wotbench-hog
