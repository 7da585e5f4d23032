# wotbench-ge: the gateway emulator (included by the top-level Makefile).
GE_DIR  := gateway-emulator
GE_SRCS := cli.c hosts.c trace.c plan.c hist.c wire.c timers.c ring.c window.c reuse.c loop.c recv.c counters.c stats.c output.c rt.c
# One foreign source: the --cpus LIST parser is the device's, so that both
# programs take one syntax (fuzzed there as fuzz-device-cpulist). It is
# compiled here with the GE's flags into the GE's own object folders.
GE_CPULIST := device/cpulist.c
GE_HDRS := $(GE_DIR)/ge.h $(GE_DIR)/ge_format.h device/cpulist.h
GE_OBJ  := $(BUILD)/obj/gateway-emulator
GE_OBJS := $(addprefix $(GE_OBJ)/,$(GE_SRCS:.c=.o) cpulist.o)
GE_ASAN_OBJS := $(addprefix $(GE_OBJ)/asan/,$(GE_SRCS:.c=.o) cpulist.o)
GE_FUZZ_OBJS := $(addprefix $(GE_OBJ)/fuzz/,$(GE_SRCS:.c=.o) cpulist.o)

$(GE_OBJ)/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/asan/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/fuzz/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -I$(GE_DIR) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/cpulist.o: $(GE_CPULIST) $(GE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(GE_OBJ)/asan/cpulist.o: $(GE_CPULIST) $(GE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -c $< -o $@

$(GE_OBJ)/fuzz/cpulist.o: $(GE_CPULIST) $(GE_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -c $< -o $@

$(BIN)/wotbench-ge: $(GE_OBJS) $(GE_OBJ)/main.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(STATIC_LDFLAGS) $(COAP_LIB)

$(BUILD)/asan/wotbench-ge: $(GE_ASAN_OBJS) $(GE_OBJ)/asan/main.o
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(COAP_LIB)

$(BUILD)/fuzz/fuzz-gateway-emulator-%: $(GE_OBJ)/fuzz/fuzz_%.o $(GE_FUZZ_OBJS)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_FLAGS) -o $@ $^ $(COAP_LIB)

$(GE_OBJ)/fuzz/fuzz_%.o: $(GE_DIR)/fuzz/fuzz_%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -I$(GE_DIR) -I$(COAP_INC) -c $< -o $@

FUZZERS += $(BUILD)/fuzz/fuzz-gateway-emulator-trace $(BUILD)/fuzz/fuzz-gateway-emulator-datagram

# Submitted-versus-expected inter-arrival times at rising rates (README).
bench-ge: $(BIN)/wotbench-ge $(BIN)/wotbench-device venv
	$(PY) $(GE_DIR)/bench/bench_ge.py $(BENCH_GE_ARGS)
	$(PY) $(GE_DIR)/bench/bench_ge_ct.py $(BENCH_GE_CT_ARGS)   # in containers (docs/bench-ge.md)

# Keep the fuzz objects (make would delete them as intermediates).
.SECONDARY: $(GE_FUZZ_OBJS) $(GE_OBJ)/fuzz/fuzz_trace.o $(GE_OBJ)/fuzz/fuzz_datagram.o

# Streaming: peak RSS against trace length, and send lag, of the binary
# before streaming (OLD=path/to/wotbench-ge) and this tree's, side by side.
.PHONY: bench-ge-stream
bench-ge-stream: $(BIN)/wotbench-ge $(BIN)/wotbench-device venv
	$(PY) $(GE_DIR)/bench/bench_ge_stream.py --old $(OLD) $(BENCH_GE_STREAM_ARGS)
