# normlab — build, run and test.
#   make          build ./normlab and build/libnormlab.a
#   make run      install what is missing, build, and generate from the default model
#   make test     the whole suite, plain and under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-bare   make test as on a machine without the Python packages (root: a private mount namespace)
#   make parity   the C engine against the independent PyTorch reference (needs python3-torch)
#   make docs-check  every example of README.md and docs/ (the long ones too) and their links

CC ?= cc
# snprintf into fixed message buffers truncates on purpose, so that warning is off; so is -Wpsabi, whose note
# on 64-byte vector arguments (attend_lanes.h, inlined) GCC 12 prints even under a pragma.
WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-format-truncation -Wno-psabi
# Each layer compiles with the public headers (include/normlab/) and its own folder, so that the
# compiler refuses a wrong-way #include: the core (engine/, tokenizer/) <- the lab (engine/lab/) <- the
# command line (engine/cli/). The lab sees one internal core header (engine/internal/, which refuses a
# file compiled without NL_INTERNAL); the core's NL_BUILD_CORE makes normlab_lab.h refuse it. The
# command line sees the public headers only, like any embedder. Tests and tools see every layer.
CORE_INC = -Iinclude/normlab -Iengine/internal -Iengine -Itokenizer -DNL_INTERNAL -DNL_BUILD_CORE
LAB_INC = -Iinclude/normlab -Iengine/internal -Iengine/lab -DNL_INTERNAL
CLI_INC = -Iinclude/normlab -Iengine/cli
INC = -Iinclude/normlab -Iengine/internal -Iengine -Itokenizer -Iengine/lab -Iengine/cli -DNL_INTERNAL
build/rel/engine/%.o build/san/engine/%.o build/rel/tokenizer/%.o build/san/tokenizer/%.o: INC = $(CORE_INC)
build/rel/engine/lab/%.o build/san/engine/lab/%.o: INC = $(LAB_INC)
build/rel/engine/cli/%.o build/san/engine/cli/%.o: INC = $(CLI_INC)
BASE_CFLAGS = -std=c11 -O2 -g $(WARN) $(INC)
SAN_FLAGS = -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
# Evaluated in recipes only, after `deps` has installed pkg-config and the libraries.
PKG_CFLAGS = $(shell pkg-config --cflags openblas libcjson)
PKG_LIBS = $(shell pkg-config --libs openblas libcjson) -lm -pthread

LIB_SRC = engine/nl_error.c engine/model.c engine/config.c engine/safetensors.c engine/jsonx.c engine/fileio.c \
          engine/inline_tensors.c engine/norms.c engine/activations.c engine/rope.c engine/rnn_cells.c \
          engine/attention.c engine/sampler_math.c engine/linear.c engine/matvec.c engine/dtype.c engine/qmatvec.c \
          engine/bind.c engine/transformer_weights.c engine/transformer.c engine/transformer_attention.c \
          engine/transformer_info.c engine/recipe.c engine/families.c \
          engine/describe.c engine/state.c engine/model_write.c engine/tensor_set.c engine/fold.c \
          engine/transformer_fold.c engine/gguf.c engine/gguf_model.c engine/gguf_tokenizer.c \
          engine/sampler.c \
          engine/sampler_fast.c engine/rng.c \
          engine/generate.c engine/context.c \
          engine/eval.c engine/parallel.c engine/blascore.c engine/clock.c \
          engine/lab/profile.c engine/lab/stats.c engine/lab/compare.c engine/lab/lens.c engine/lab/quantize.c \
          engine/lab/fold.c engine/lab/patch.c engine/lab/kldiv.c engine/lab/attnstats.c \
          engine/rnn.c \
          tokenizer/tokenizer.c tokenizer/tokenizer_files.c tokenizer/tokenizer_json.c tokenizer/bpe.c tokenizer/spm.c \
          tokenizer/spm_hf.c tokenizer/bpe_hf.c tokenizer/pretokenize.c tokenizer/nfc.c tokenizer/unicode.c \
          tokenizer/unicode_tables.c
HEADERS = $(wildcard include/normlab/*.h engine/internal/*.h engine/*.h engine/lab/*.h engine/cli/*.h tokenizer/*.h \
                     tests/*.h)
CLI_SRC = engine/cli/main.c engine/cli/options.c engine/cli/models.c engine/cli/process.c engine/cli/io_check.c \
          engine/cli/prompts.c engine/cli/workers.c engine/cli/distance.c engine/cli/cmd_generate.c \
          engine/cli/cmd_eval.c engine/cli/cmd_logits.c engine/cli/cmd_compare.c engine/cli/cmd_info.c \
          engine/cli/cmd_profile.c \
          engine/cli/cmd_tokenize.c engine/cli/commands_table.c engine/cli/help.c \
          engine/cli/output.c engine/cli/msg.c engine/cli/report_profile.c engine/cli/report_compare.c \
          engine/cli/report_attention.c engine/cli/report_compare_data.c engine/cli/report_rows.c \
          engine/cli/jsonout.c engine/cli/escape.c engine/cli/stops.c engine/cli/kl.c engine/cli/cmd_bench.c \
          engine/cli/stream.c engine/cli/cmd_interactive.c engine/cli/option_choices.c \
          engine/cli/utf8.c engine/cli/collect.c engine/cli/cmd_quantize.c engine/cli/model_folder.c \
          engine/cli/cmd_fold.c engine/cli/cmd_patch.c engine/cli/generate_report.c
TESTS = test_tokenizer test_bpe_kinds test_spm test_kernels test_norms test_sampler test_sampler_fast test_loader \
        test_config test_forward test_golden test_profile test_compare test_parallel test_rnn test_quant test_lab \
        test_context test_dtype test_report_compare test_recipe test_window
FUZZERS = safetensors config tokenizer inline prompt gguf
RUN_ARGS ?= -n 500

.PHONY: all deps fuzz-deps run test test-plain test-san test-install format-check parity eval-models bpe-eval \
        llama-eval compare-models docs cli-doc docs-check depth-study fuzz bench clean install uninstall rnn-models \
        rnn-report lab-models test-bare

all: deps normlab build/libnormlab.a

deps:
	@tools/install-deps.sh

# ---- one object tree per variant: build/rel (plain) and build/san (sanitizers)
# The element-wise kernels are written for the vectoriser, which -O2 leaves mostly off; without
# -fno-trapping-math it will not turn the clamps in the GELU loop into blends.
VEC_OBJ = norms activations rope rnn_cells attention sampler_math matvec
$(foreach v,rel san,$(VEC_OBJ:%=build/$(v)/engine/%.o)): \
    VEC_FLAGS = -O3 -fno-trapping-math -fno-math-errno -ffp-contract=fast

build/rel/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(VEC_FLAGS) $(PKG_CFLAGS) -c $< -o $@

build/san/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(VEC_FLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -c $< -o $@

build/rel/libnormlab.a: $(LIB_SRC:%.c=build/rel/%.o)
	rm -f $@ && ar rcs $@ $^

build/san/libnormlab.a: $(LIB_SRC:%.c=build/san/%.o)
	rm -f $@ && ar rcs $@ $^

build/libnormlab.a: build/rel/libnormlab.a
	cp $< $@

normlab: $(CLI_SRC:%.c=build/rel/%.o) build/rel/libnormlab.a
	$(CC) $^ $(PKG_LIBS) -o $@

build/san/normlab: $(CLI_SRC:%.c=build/san/%.o) build/san/libnormlab.a
	$(CC) $(SAN_FLAGS) $^ $(PKG_LIBS) -o $@

build/rel/tests/%: build/rel/tests/%.o build/rel/tests/check.o build/rel/tests/ref_forward.o build/rel/libnormlab.a
	$(CC) $(filter %.o,$^) $(filter %.a,$^) $(PKG_LIBS) -o $@

build/san/tests/%: build/san/tests/%.o build/san/tests/check.o build/san/tests/ref_forward.o build/san/libnormlab.a
	$(CC) $(SAN_FLAGS) $(filter %.o,$^) $(filter %.a,$^) $(PKG_LIBS) -o $@

# The report writers are the command line's (presentation); the tests of the reports link them too.
REPORT_OBJ = engine/cli/report_profile.o engine/cli/report_compare.o engine/cli/report_compare_data.o \
             engine/cli/report_rows.o engine/cli/report_attention.o \
             engine/cli/jsonout.o engine/cli/msg.o engine/cli/utf8.o
REPORT_TESTS = test_profile test_compare test_lab test_report_compare
$(REPORT_TESTS:%=build/rel/tests/%): $(REPORT_OBJ:%=build/rel/%)
$(REPORT_TESTS:%=build/san/tests/%): $(REPORT_OBJ:%=build/san/%)
# The command line's UTF-8 writing (utf8.c) is tested beside the tokenizer's decoder it is built on.
build/rel/tests/test_tokenizer: build/rel/engine/cli/utf8.o
build/san/tests/test_tokenizer: build/san/engine/cli/utf8.o

.SECONDARY:

run: all
	@if [ -f weights/shakespeare-pre-ln/model.safetensors ]; then \
	    ./normlab generate -m weights/shakespeare-pre-ln -p "ROMEO:" --echo $(RUN_ARGS); \
	else \
	    echo "normlab: no trained model is present yet (weights/shakespeare-pre-ln); see docs/training.md"; \
	fi

# The last line adds up the four parts (tests/total.sh): "N passed, M failed", and ", K skipped (...)"
# naming the packages whose checks could not run.
# Both variants' programs are built first on two cores (quietly: a failure shows again in its part).
test: deps
	@rm -rf build/counts
	@$(MAKE) --no-print-directory -s -j2 -k $(PLAIN_TEST_BINS) $(SAN_TEST_BINS) > /dev/null 2>&1 || true
	@$(MAKE) --no-print-directory -k test-plain test-san test-install format-check < /dev/null; \
	    tests/total.sh plain sanitizers install format

# make test where only `make run` has installed: Debian's Python package folders hidden by empty
# bind mounts in a private mount namespace (tests/bare_test.sh; needs root, as CI has). It fails on a
# traceback, on a failure, or if nothing was skipped (the packages were not hidden).
test-bare: deps
	@tests/bare_test.sh $(MAKE) --no-print-directory test

PLAIN_TEST_BINS = normlab build/libnormlab.a $(addprefix build/rel/tests/,$(TESTS)) \
                  $(addprefix build/rel/tests/replay_,$(FUZZERS)) build/rel/tests/ref_logits build/fault_shim.so \
                  build/rel/tests/bpe_ids build/rel/tests/spm_ids
SAN_TEST_BINS = build/san/normlab $(addprefix build/san/tests/,$(TESTS)) \
                $(addprefix build/san/tests/replay_,$(FUZZERS)) build/rel/tests/ref_logits build/san/tests/bpe_ids \
                build/san/tests/spm_ids
test-plain: $(PLAIN_TEST_BINS)
	@tests/run.sh plain build/rel ./normlab

# tests/fault_test.sh: an LD_PRELOAD library that fails the Nth write/close/rename/fsync/open of an output.
build/fault_shim.so: tests/fault/shim.c
	@mkdir -p build
	$(CC) -std=c11 -O2 $(WARN) -shared -fPIC $< -ldl -o $@

# Checks only: C as .clang-format leaves it, no source line over 120 characters (tests/format_check.sh).
format-check:
	@tests/total.sh --count format tests/format_check.sh

test-san: $(SAN_TEST_BINS)
	@tests/run.sh sanitizers build/san build/san/normlab

# Every example of README.md and docs/*.md, the long ones too (training, bench, parity, install), and
# their links; make test runs the short ones (tests/examples_test.sh, docs/testing.md).
docs-check: all build/libnormlab.a
	tests/examples_test.sh --long ./normlab
	tests/links_test.sh

parity: all
	@tools/install-deps.sh --python
	/usr/bin/python3 tools/reference/parity.py
	/usr/bin/python3 tools/reference/hf_gpt2_parity.py
	/usr/bin/python3 tools/reference/llama_parity.py
	@if command -v node >/dev/null 2>&1 && [ -d build/ort/node_modules/onnxruntime-node ]; then \
	    /usr/bin/python3 tools/interop/onnx_parity.py; \
	else echo "note: Node.js or onnxruntime-node missing; the ONNX export is not checked"; fi

clean:
	rm -rf build normlab

# Validation loss of the shipped models, measured by the C engine over the whole validation split.
CORPUS ?= ../shared/data/tinyshakespeare.txt
eval-models: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	@for m in weights/shakespeare-*/; do \
	    printf '%-32s ' "$$m"; ./normlab eval -m "$$m" --text build/val.txt --json; \
	done

# The shipped BPE model's figures for the README's table (docs/gpt2/): eval over the same validation
# text, its bits per byte beside the character models' bits per character (the text is ASCII).
bpe-eval: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	@mkdir -p docs/gpt2
	./normlab eval -m weights/shakespeare-bpe --text build/val.txt --json > build/bpe-eval.json  # (no token_nll)
	mv build/bpe-eval.json docs/gpt2/eval.json
	./normlab info -m weights/shakespeare-bpe --json -o docs/gpt2/info.json

# shakespeare-llama's bits per byte over the validation split (the README's models table, docs/llama.md)
llama-eval: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	@mkdir -p docs/llama
	./normlab eval -m weights/shakespeare-llama --text build/val.txt --json > build/llama-eval.json  # (no token_nll)
	mv build/llama-eval.json docs/llama/eval.json
	./normlab info -m weights/shakespeare-llama --json -o docs/llama/info.json

# ---- fuzzing: libFuzzer harnesses (clang), and their corpora replayed by `make test`
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
             -Iinclude/normlab -Iengine/internal -Iengine -Iengine/lab -Itokenizer -DNL_INTERNAL

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) $(PKG_CFLAGS) $< $(LIB_SRC) $(PKG_LIBS) -o $@

build/rel/tests/replay_%: build/rel/tests/fuzz/fuzz_%.o build/rel/tests/fuzz/replay.o build/rel/libnormlab.a
	$(CC) $^ $(PKG_LIBS) -o $@

build/san/tests/replay_%: build/san/tests/fuzz/fuzz_%.o build/san/tests/fuzz/replay.o build/san/libnormlab.a
	$(CC) $(SAN_FLAGS) $^ $(PKG_LIBS) -o $@

fuzz-deps:
	@tools/install-deps.sh --fuzz

fuzz: deps fuzz-deps $(addprefix build/fuzz/fuzz_,$(FUZZERS))
	@mkdir -p tests/fuzz/crashes
	@for h in $(FUZZERS); do \
	    mkdir -p build/fuzz/corpus-$$h; \
	    echo "== fuzz_$$h for $(FUZZ_SECONDS) s"; \
	    build/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=tests/fuzz/crashes/$$h- build/fuzz/corpus-$$h tests/fuzz/corpus/$$h 2>&1 \
	        | grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|==.*ERROR|SUMMARY)' ; \
	done

# docs/findings-norms.md's comparison of the shipped models, on the validation split (held out from training).
SHIPPED_MODELS = weights/shakespeare-pre-ln weights/shakespeare-post-ln weights/shakespeare-pre-rms \
    weights/shakespeare-post-rms weights/shakespeare-pre-bn weights/shakespeare-post-bn \
    weights/shakespeare-peri-ln weights/shakespeare-deepnorm weights/shakespeare-nonorm \
    weights/shakespeare-lstm-ln weights/shakespeare-lstm weights/shakespeare-gru-ln weights/shakespeare-gru \
    weights/shakespeare-post-sublayer-rms weights/shakespeare-parallel-ln weights/shakespeare-parallel-shared-ln \
    weights/shakespeare-mix-ln weights/shakespeare-sub-ln weights/shakespeare-dyt weights/shakespeare-peri-rms
compare-models: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	./normlab compare $(SHIPPED_MODELS) -f build/val.txt --also-swap --invariance --bn-stats both --threads 1 \
	    --json -o docs/compare/compare.json --csv docs/compare/compare.csv --plot-dir docs/compare

# The lab's experiments (docs/lab.md) on the shipped models over the validation split, into docs/lab/:
# compare's rows with the lens, the outliers and the q8, q4 and a8 rows as text (lab.txt), CSV and
# plots; and attribution.txt, eval with q4 on one class of matrices at a time. Speeds are not the
# point here (two rows run side by side). About 30 minutes on 2 cores: 20 for compare, 10 for eval.
LAB = --lens --outliers --quantize q8,q4 --quantize-act q8 --repeats 1 --threads 2
BPC = sed -n 's/.*"bits_per_char": *\([0-9.e+-]*\).*/\1/p'
lab-models: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	@mkdir -p docs/lab
	./normlab compare $(SHIPPED_MODELS) -f build/val.txt $(LAB) -o docs/lab/lab.txt --csv docs/lab/lab.csv \
	    --plot-dir docs/lab
	@{ printf '%-28s %-10s %9s %9s\n' model q4-only bits/char cost; \
	  for m in $(SHIPPED_MODELS); do \
	    base=$$(./normlab eval -m $$m -f build/val.txt --json | $(BPC)); \
	    for c in attn mlp head embed recurrent; do \
	      b=$$(./normlab eval -m $$m -f build/val.txt --json --quantize q4 --quantize-only $$c 2>/dev/null | $(BPC)); \
	      if [ -n "$$b" ]; then awk -v m=$${m#weights/} -v c=$$c -v b=$$b -v a=$$base \
	          'BEGIN { printf "%-28s %-10s %9.4f %+9.4f\n", m, c, b, b - a }'; fi; \
	    done; \
	  done; } > build/attribution.txt && mv build/attribution.txt docs/lab/attribution.txt

# The four recurrent models (docs/forward.md): the same size and steps for all, one thread
# each (about 35-45 min each on this project's 2-core machines with two running at once).
RNN_RECIPE = --n-layer 2 --n-embd 64 --n-hidden 128 --steps 2000 --threads 1 --no-progress
rnn-models: all
	/usr/bin/python3 tools/train/train.py --data $(CORPUS) --arch lstm --norm layernorm $(RNN_RECIPE) \
	    --out weights/shakespeare-lstm-ln
	/usr/bin/python3 tools/train/train.py --data $(CORPUS) --arch lstm --norm none $(RNN_RECIPE) \
	    --out weights/shakespeare-lstm
	/usr/bin/python3 tools/train/train.py --data $(CORPUS) --arch gru --norm layernorm $(RNN_RECIPE) \
	    --out weights/shakespeare-gru-ln
	/usr/bin/python3 tools/train/train.py --data $(CORPUS) --arch gru --norm none $(RNN_RECIPE) \
	    --out weights/shakespeare-gru

# The recurrent models beside the transformers: normlab eval over the validation split, the curves'
# losses at equal steps, eval segments, and the loss curves (docs/rnn/).
rnn-report: all
	@/usr/bin/python3 tools/train/split.py $(CORPUS) build/val.txt
	/usr/bin/python3 tools/lab/rnn_report.py build/val.txt docs/rnn

# docs/cli.md comes from the option table, as the man page and the completion do (tests/options_test.sh
# checks that they agree): remake it after changing a command's or an option's help.
cli-doc: normlab
	./normlab help --markdown > docs/cli.md

# Every generated document: docs/compare/ and docs/profile/ from the current build, then the tables
# of README.md and docs/ that quote them (tools/dev/docs.py; make test checks that they agree).
docs: compare-models
	taskset -c 1 ./normlab profile -m weights/shakespeare-pre-ln -n 256 --threads 1 -o docs/profile/profile.txt
	taskset -c 1 ./normlab profile -m weights/shakespeare-pre-ln -n 256 --threads 1 --json -o docs/profile/profile.json
	/usr/bin/python3 tools/dev/docs.py --write

# The depth and warm-up study (docs/findings-depth.md): curves of every run, and compare of the
# final models, from weights/depth/ (tools/lab/depth_study.py train makes the runs: about an hour).
depth-study: all
	/usr/bin/python3 tools/lab/depth_study.py plot

# ---- benchmark: normlab against nanoGPT-style PyTorch and PyTorch with a KV cache (tools/bench/bench.py)
build/blasbench: tools/bench/blasbench.c tools/bench/benchutil.h
	@mkdir -p build
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror $(PKG_CFLAGS) $< $(PKG_LIBS) -o $@

# the measurement behind ATTEND_ROWS_MIN (engine/transformer.c): it calls the kernels, so it links the library
build/attnrows: tools/bench/attnrows.c tools/bench/benchutil.h build/rel/libnormlab.a $(HEADERS)
	@mkdir -p build
	$(CC) $(BASE_CFLAGS) $(PKG_CFLAGS) $< build/rel/libnormlab.a $(PKG_LIBS) -lm -o $@

# the table behind nl_linear's plan: it calls the plan itself, so it links the library
build/blaslayout: tools/bench/blaslayout.c tools/bench/benchutil.h build/rel/libnormlab.a $(HEADERS)
	@mkdir -p build
	$(CC) $(BASE_CFLAGS) $(PKG_CFLAGS) $< build/rel/libnormlab.a $(PKG_LIBS) -o $@

# docs/bench.json is the one measured file every speed and share of README.md and docs/ comes from
# (tools/dev/docs.py); docs/bench.txt is what the run printed. Each is replaced only by a whole run.
bench: all build/blasbench build/blaslayout build/attnrows
	@tools/install-deps.sh --python
	/usr/bin/python3 tools/bench/bench.py --out docs/bench.json --log docs/bench.txt

# ---- install: make install PREFIX=/usr/local DESTDIR=  (make uninstall reverses it)
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib
INCLUDEDIR = $(PREFIX)/include/normlab
DATADIR = $(PREFIX)/share
MODELS = $(patsubst weights/%/config.json,%,$(wildcard weights/*/config.json))
VERSION = $(shell sed -n 's/^#define NL_VERSION "\(.*\)"/\1/p' include/normlab/normlab.h)

build/normlab.1: normlab tools/dev/make_man.sh
	@mkdir -p build
	tools/dev/make_man.sh ./normlab > $@

build/normlab.bash: normlab tools/dev/make_completion.sh
	@mkdir -p build
	tools/dev/make_completion.sh ./normlab > $@

# The PREFIX of the last build, rewritten only when it changes: normlab.pc, which embeds it, is remade
# then (and only then), so that `make install PREFIX=B` after PREFIX=A installs B's file.
build/prefix.stamp: FORCE
	@mkdir -p build
	@printf '%s\n' '$(PREFIX)' | cmp -s - $@ || printf '%s\n' '$(PREFIX)' > $@

.PHONY: FORCE
FORCE:

build/normlab.pc: include/normlab/normlab.h Makefile build/prefix.stamp
	@mkdir -p build
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include/normlab' '' \
	    'Name: normlab' 'Description: a small transformer inference engine with switchable normalization' \
	    'Version: $(VERSION)' 'Requires: openblas libcjson' 'Cflags: -I$${includedir}' \
	    'Libs: -L$${libdir} -lnormlab -lm -pthread' > $@

install: all build/libnormlab.a build/normlab.1 build/normlab.bash build/normlab.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(DATADIR)/man/man1 $(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/normlab
	install -m 755 normlab $(DESTDIR)$(BINDIR)/normlab
	install -m 644 build/libnormlab.a $(DESTDIR)$(LIBDIR)/libnormlab.a
	install -m 644 include/normlab/normlab.h include/normlab/normlab_error.h include/normlab/normlab_tokenizer.h \
	    include/normlab/normlab_lab.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 build/normlab.pc $(DESTDIR)$(LIBDIR)/pkgconfig/normlab.pc
	install -m 644 build/normlab.1 $(DESTDIR)$(DATADIR)/man/man1/normlab.1
	install -m 644 build/normlab.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/normlab
	install -d $(DESTDIR)$(DATADIR)/normlab/lab $(DESTDIR)$(DATADIR)/normlab/lib
	install -m 644 tools/lab/plot_compare.py tools/lab/plot_patch.py $(DESTDIR)$(DATADIR)/normlab/lab/
	install -m 644 tools/lib/nltool.py tools/lib/needs.py $(DESTDIR)$(DATADIR)/normlab/lib/
	for m in $(MODELS); do \
	    install -d $(DESTDIR)$(DATADIR)/normlab/models/$$m && \
	    install -m 644 weights/$$m/config.json weights/$$m/tokenizer.json weights/$$m/model.safetensors \
	        $(DESTDIR)$(DATADIR)/normlab/models/$$m/ || exit 1; \
	    if [ -f weights/$$m/train_log.json ]; then \
	        install -m 644 weights/$$m/train_log.json $(DESTDIR)$(DATADIR)/normlab/models/$$m/; fi; \
	done

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/normlab $(DESTDIR)$(LIBDIR)/libnormlab.a $(DESTDIR)$(LIBDIR)/pkgconfig/normlab.pc \
	    $(DESTDIR)$(DATADIR)/man/man1/normlab.1 $(DESTDIR)$(DATADIR)/bash-completion/completions/normlab
	rm -rf $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(DATADIR)/normlab

# make test: install into a scratch prefix and use it as a user would (tests/install_test.sh)
test-install:
	@tmp=$$(mktemp -d /tmp/normlab-install-XXXXXX); \
	$(MAKE) --no-print-directory -s install DESTDIR=$$tmp PREFIX=/opt/normlab > $$tmp.log 2>&1 \
	    || { cat $$tmp.log; echo "install: 0 passed, 1 failed"; tests/total.sh --record install 0 1 0 ""; \
	         rm -rf $$tmp $$tmp.log; exit 1; }; \
	tests/total.sh --count install tests/install_test.sh $$tmp /opt/normlab; rc=$$?; \
	$(MAKE) --no-print-directory -s uninstall DESTDIR=$$tmp PREFIX=/opt/normlab; \
	left=$$(find $$tmp -type f | wc -l); rm -rf $$tmp $$tmp.log; \
	[ "$$left" -eq 0 ] || { echo "uninstall left $$left files"; tests/total.sh --record install 0 1 0 ""; exit 1; }; \
	exit $$rc
