# wotbench-ge: the gateway emulator (included by the top-level Makefile).
# One header per module (README.md, "Design"), and no two files that call
# each other (tests/test_style.py checks the call graph of the objects'
# symbols), so that each fuzzer links only the modules it needs.
GE_DIR  := gateway-emulator
GE_MODS := err json cli files hosts trace plan north hist wire timers ring \
           window reuse state loop recv counters stats output rt \
           http_parse http_req http cc held textout rtolog obs obstab obsout \
           txstamp keep
# One foreign source: the --cpus LIST parser is the device's, so that both
# programs take one syntax (fuzzed there as fuzz-device-cpulist). It is
# compiled here with the GE's flags into the GE's own object folders.
GE_CPULIST := device/cpulist.c
GE_HDRS := $(wildcard $(GE_DIR)/*.h) device/cpulist.h device/buildinfo.h
GE_OBJ  := $(BUILD)/obj/gateway-emulator
GE_OBJS := $(addprefix $(GE_OBJ)/,$(GE_MODS:=.o) cpulist.o buildinfo.o)
GE_ASAN_OBJS := $(addprefix $(GE_OBJ)/asan/,$(GE_MODS:=.o) cpulist.o buildinfo.o)
# What each fuzzer links: the modules its entry points reach, no more
# (neither main, cli, the socket loop nor the summary writer).
GE_FUZZ_TRACE_MODS := err files hosts trace plan north wire hist
GE_FUZZ_DATAGRAM_MODS := $(GE_FUZZ_TRACE_MODS) recv state window ring timers \
                         output reuse rt json cc textout rtolog obs obstab obsout \
                         txstamp
# The HTTP response parser alone (pure: bytes in, events out).
GE_FUZZ_HTTP_MODS := http_parse
GE_FUZZ_OBJS := $(addprefix $(GE_OBJ)/fuzz/,$(GE_FUZZ_DATAGRAM_MODS:=.o) \
                  $(GE_FUZZ_HTTP_MODS:=.o))

$(GE_OBJ)/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/asan/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/fuzz/%.o: $(GE_DIR)/%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -I$(GE_DIR) -I$(COAP_INC) -c $< -o $@

$(GE_OBJ)/cpulist.o: $(GE_CPULIST) $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(GE_OBJ)/asan/cpulist.o: $(GE_CPULIST) $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -c $< -o $@

# The static binary links the device's numeric-only resolver
# (device/noresolv.c: keeps glibc's getaddrinfo.o, and its link warning, out).
$(GE_OBJ)/noresolv.o: device/noresolv.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

GE_LDFLAGS := $(STATIC_LDFLAGS) $(COAP_LIB) -lm
GE_ASAN_LDFLAGS := $(COAP_LIB) -lm
$(BIN)/wotbench-ge: $(GE_OBJS) $(GE_OBJ)/main.o $(GE_OBJ)/noresolv.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $^ $(GE_LDFLAGS)

$(BUILD)/asan/wotbench-ge: $(GE_ASAN_OBJS) $(GE_OBJ)/asan/main.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(SAN_FLAGS) -o $@ $^ $(GE_ASAN_LDFLAGS)

# --build-info: the device's device/buildinfo.c, compiled here with the
# GE's flags and link flags as macros (Makefile, BI_STAMP).
BI_GE := $(call bi_defs,$(ALL_CFLAGS),$(GE_LDFLAGS))
BI_GE_ASAN := $(call bi_defs,$(CSTD) $(CWARN) $(SAN_FLAGS),$(GE_ASAN_LDFLAGS))
$(GE_OBJ)/buildinfo.o: device/buildinfo.c device/buildinfo.h $(BI_STAMP)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(BI_GE) -c $< -o $@

$(GE_OBJ)/asan/buildinfo.o: device/buildinfo.c device/buildinfo.h $(BI_STAMP)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) $(BI_GE_ASAN) -c $< -o $@

# The congestion-control replay driver (tests/cc_vectors.c, run by
# tests/test_cc.py): cc.o alone, release and ASan/UBSan, built by
# `make build` / `make build-asan`.
GE_CC_VECTORS := $(BUILD)/test/ge-cc-vectors
GE_CC_VECTORS_ASAN := $(BUILD)/asan/ge-cc-vectors
build: $(GE_CC_VECTORS)
build-asan: $(GE_CC_VECTORS_ASAN)

$(GE_CC_VECTORS): $(GE_DIR)/tests/cc_vectors.c $(GE_OBJ)/cc.o $(GE_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -I$(GE_DIR) -o $@ $< $(GE_OBJ)/cc.o -lm

$(GE_CC_VECTORS_ASAN): $(GE_DIR)/tests/cc_vectors.c $(GE_OBJ)/asan/cc.o $(GE_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -I$(GE_DIR) -o $@ $< $(GE_OBJ)/asan/cc.o -lm

# The Observe classifier's replay driver (tests/obs_vectors.c, run by
# tests/test_obs.py): obs.o alone, release and ASan/UBSan.
GE_OBS_VECTORS := $(BUILD)/test/ge-obs-vectors
GE_OBS_VECTORS_ASAN := $(BUILD)/asan/ge-obs-vectors
build: $(GE_OBS_VECTORS)
build-asan: $(GE_OBS_VECTORS_ASAN)

$(GE_OBS_VECTORS): $(GE_DIR)/tests/obs_vectors.c $(GE_OBJ)/obs.o $(GE_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -I$(GE_DIR) -o $@ $< $(GE_OBJ)/obs.o

$(GE_OBS_VECTORS_ASAN): $(GE_DIR)/tests/obs_vectors.c $(GE_OBJ)/asan/obs.o $(GE_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CSTD) $(CWARN) $(SAN_FLAGS) -I$(GE_DIR) -o $@ $< $(GE_OBJ)/asan/obs.o

$(BUILD)/fuzz/fuzz-gateway-emulator-trace: $(GE_OBJ)/fuzz/fuzz_trace.o \
    $(addprefix $(GE_OBJ)/fuzz/,$(GE_FUZZ_TRACE_MODS:=.o))
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(FUZZ_FLAGS) -o $@ $^ $(COAP_LIB)

$(BUILD)/fuzz/fuzz-gateway-emulator-datagram: $(GE_OBJ)/fuzz/fuzz_datagram.o \
    $(addprefix $(GE_OBJ)/fuzz/,$(GE_FUZZ_DATAGRAM_MODS:=.o))
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(FUZZ_FLAGS) -o $@ $^ $(COAP_LIB) -lm

# The Observe classifier and payload parser alone (pure).
$(BUILD)/fuzz/fuzz-ge-obs: $(GE_OBJ)/fuzz/fuzz_obs.o $(GE_OBJ)/fuzz/obs.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(FUZZ_FLAGS) -o $@ $^

$(BUILD)/fuzz/fuzz-ge-http: $(GE_OBJ)/fuzz/fuzz_http.o \
    $(addprefix $(GE_OBJ)/fuzz/,$(GE_FUZZ_HTTP_MODS:=.o))
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(FUZZ_FLAGS) -o $@ $^

$(GE_OBJ)/fuzz/fuzz_%.o: $(GE_DIR)/fuzz/fuzz_%.c $(GE_HDRS)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(CSTD) $(CWARN) $(FUZZ_FLAGS) -I$(GE_DIR) -I$(COAP_INC) -c $< -o $@

FUZZERS += $(BUILD)/fuzz/fuzz-gateway-emulator-trace $(BUILD)/fuzz/fuzz-gateway-emulator-datagram \
           $(BUILD)/fuzz/fuzz-ge-http $(BUILD)/fuzz/fuzz-ge-obs

# Submitted-versus-expected inter-arrival times at rising rates (README).
bench-ge: $(BIN)/wotbench-ge $(BIN)/wotbench-device $(BUILD)/bench/ge-httpd venv
	$(Q)$(PY) $(GE_DIR)/bench/bench_ge.py $(BENCH_GE_ARGS)
	$(Q)$(PY) $(GE_DIR)/bench/bench_ge_http.py $(BENCH_GE_HTTP_ARGS)   # --north http beside wrk
	$(Q)$(PY) $(GE_DIR)/bench/bench_ge_ct.py $(BENCH_GE_CT_ARGS)   # in containers (docs/bench-ge.md)

# bench-ge's trivial keep-alive HTTP server (bench/httpd.c).
$(BUILD)/bench/ge-httpd: $(GE_DIR)/bench/httpd.c
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(ALL_CFLAGS) -o $@ $<

# Keep the fuzz objects (make would delete them as intermediates).
.SECONDARY: $(GE_FUZZ_OBJS) $(GE_OBJ)/fuzz/fuzz_trace.o $(GE_OBJ)/fuzz/fuzz_datagram.o \
            $(GE_OBJ)/fuzz/fuzz_http.o $(GE_OBJ)/fuzz/fuzz_obs.o $(GE_OBJ)/fuzz/obs.o

# Streaming: peak RSS against trace length, and send lag, of the binary
# before streaming (OLD=path/to/wotbench-ge) and this tree's, side by side.
.PHONY: bench-ge-stream
bench-ge-stream: $(BIN)/wotbench-ge $(BIN)/wotbench-device venv
	$(Q)$(PY) $(GE_DIR)/bench/bench_ge_stream.py --old $(OLD) $(BENCH_GE_STREAM_ARGS)

# The GE's cocoa and rfc7252 beside Californium 3.14.0's COCOA and NULL, on
# the wire of one scripted-loss relay in front of one device (issue 26 item 5;
# docs/congestion.md, "Cross-check with Californium"). Needs JDK 17 and Maven;
# the first build resolves Californium from Maven Central, later ones work
# offline. A bench: not part of `make test` or CI (about ten minutes).
CROSSCHECK_CF := $(GE_DIR)/bench/californium
$(BUILD)/crosscheck-cc/classpath.txt: $(CROSSCHECK_CF)/pom.xml $(wildcard $(CROSSCHECK_CF)/src/main/java/*/*/*.java)
	$(Q)mvn -o -q -B -f $(CROSSCHECK_CF)/pom.xml package || mvn -q -B -f $(CROSSCHECK_CF)/pom.xml package
	$(Q)touch $@

.PHONY: crosscheck-cc
crosscheck-cc: $(BIN)/wotbench-ge $(BIN)/wotbench-device $(BUILD)/crosscheck-cc/classpath.txt
	$(Q)python3 $(GE_DIR)/bench/crosscheck_cc.py $(CROSSCHECK_CC_ARGS)
