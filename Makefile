# Two entry points (see README.md):
#   make demo   install into .venv, then datagen -> train -> decode -> evaluate
#               -> analyze on the embedded synthetic_syntax_reorder problem
#               (`make demo BACKEND=jax`: training, decoding and the analysis run
#               under JAX in .venv-jax, without TensorFlow; datagen, which needs
#               TensorFlow, and the scoring stay in .venv; DEMO defaults to demo-jax)
#   make test   install into .venv (with test extras) and .venv-jax (JAX on the
#               CPU, no TensorFlow), then run the test suite under TensorFlow and
#               the modeling tests (marked `backends`) again under JAX
#               (`make test-slow` runs the tests marked slow; CI runs both)
#
# The install step installs torch before the rest: stanza (the `stanza` extra,
# part of the test extras) depends on it. TORCH picks the build, e.g.
#   make install TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
# for the CPU build on any machine, TORCH=torch==2.13.0 for PyPI's default
# (CUDA on Linux), or TORCH= to leave torch to pip.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
# The Keras backend of the demo's training, decoding and analysis: tensorflow or jax.
BACKEND ?= tensorflow
ifeq ($(BACKEND),jax)
DEMO ?= demo-jax
else
DEMO ?= demo
endif
DEMO_STEPS ?= 1500
# pytest-xdist workers; CI machines have 2 cores.
TEST_WORKERS ?= 2
# The second environment: Keras on JAX with no TensorFlow in it, as on the GPU
# machines; the project goes in without its (TensorFlow) dependencies.
JAX_VENV ?= .venv-jax
JAX_PY := $(JAX_VENV)/bin/python
JAX ?= jax[cpu]>=0.6,<0.12
JAX_PACKAGES := "$(JAX)" "keras>=3.10,<4" "numpy>=1.26,<3" "absl-py>=2.1,<3" "h5py>=3.10,<4" \
	"conllu>=5,<7" "sacrebleu>=2.4,<3" "sentencepiece>=0.2,<0.3" "matplotlib>=3.8,<4" \
	"ufal.chu_liu_edmonds>=1.0.3,<2" "protobuf>=4,<7" "google-crc32c>=1.5,<2" \
	"pytest>=8,<10" "hypothesis>=6.100,<7" "pytest-xdist>=3.5,<4"

.PHONY: install install-jax test test-jax test-slow demo clean-demo gpu-wheels gpu-session \
	gpu-grid-bundle gpu-grid

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(strip $(TORCH)),$(PY) -m pip install --quiet $(TORCH))
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

$(JAX_VENV)/.installed: setup.cfg pyproject.toml Makefile
	$(PYTHON) -m venv $(JAX_VENV)
	$(JAX_PY) -m pip install --quiet --upgrade pip
	$(JAX_PY) -m pip install --quiet $(JAX_PACKAGES)
	$(JAX_PY) -m pip install --quiet --no-deps -e .
	touch $@

install-jax: $(JAX_VENV)/.installed

# The default suite leaves out the tests marked `slow` (end-to-end training
# runs, kill/resume, the benchmark smoke test); CI runs them as well.
test: install install-jax
	$(PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider --durations=40 -m "not slow" tests
	$(MAKE) test-jax

# The modeling tests again, on JAX, where `import tensorflow` fails.
test-jax: install-jax
	KERAS_BACKEND=jax $(JAX_PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider --durations=25 -m "backends and not slow" tests

test-slow: install install-jax
	$(PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider --durations=40 -m slow tests
	KERAS_BACKEND=jax $(JAX_PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider --durations=10 -m "backends and slow" tests

DEMO_PROBLEM := synthetic_syntax_reorder
DEMO_DATA := $(DEMO)/data
DEMO_TEST := $(DEMO_DATA)/$(DEMO_PROBLEM)-test
DEMO_FLAGS := --problem=$(DEMO_PROBLEM) --data_dir=$(DEMO_DATA) --hparams_set=transformer_tiny
ifeq ($(BACKEND),jax)
DEMO_PY := KERAS_BACKEND=jax $(JAX_PY)
DEMO_INSTALL := install install-jax
else ifeq ($(BACKEND),tensorflow)
DEMO_PY := $(PY)
DEMO_INSTALL := install
else
$(error BACKEND=$(BACKEND): the demo runs on tensorflow or jax)
endif

demo: $(DEMO_INSTALL)
	$(PY) bin/datagen --problem=$(DEMO_PROBLEM) --data_dir=$(DEMO_DATA) --tmp_dir=$(DEMO)/tmp
	$(DEMO_PY) bin/train $(DEMO_FLAGS) --model=transformer --output_dir=$(DEMO)/transformer \
	  --train_steps=$(DEMO_STEPS) --eval_every=500 --save_checkpoints_steps=500
	$(DEMO_PY) bin/train $(DEMO_FLAGS) --model=dep_parse --output_dir=$(DEMO)/dep_parse \
	  --train_steps=$(DEMO_STEPS) --eval_every=500 --save_checkpoints_steps=500
	$(DEMO_PY) bin/decode $(DEMO_FLAGS) --model=transformer --output_dir=$(DEMO)/transformer \
	  --decode_hparams=beam_size=4,alpha=0.6 \
	  --decode_from_file=$(DEMO_TEST).src.conllu --decode_to_file=$(DEMO)/transformer/test.hyp
	$(DEMO_PY) bin/decode $(DEMO_FLAGS) --model=dep_parse --output_dir=$(DEMO)/dep_parse \
	  --decode_hparams=beam_size=4,alpha=0.6 \
	  --decode_from_file=$(DEMO_TEST).src.conllu --decode_to_file=$(DEMO)/dep_parse/test.hyp \
	  --parse_to_file=$(DEMO)/dep_parse/test.parse.conllu --parse_decoder=mst
	$(PY) bin/evaluate --references=$(DEMO_TEST).ref.txt \
	  --hypotheses=$(DEMO)/transformer/test.hyp,$(DEMO)/dep_parse/test.hyp \
	  --system_names=transformer,dep_parse \
	  --gold_parse=$(DEMO_TEST).src.conllu --parses=$(DEMO)/dep_parse/test.parse.conllu \
	  --json_output=$(DEMO)/scores.json
	$(DEMO_PY) bin/analyze $(DEMO_FLAGS) --model=dep_parse --output_dir=$(DEMO)/dep_parse \
	  --analyze_from_file=$(DEMO_TEST).src.conllu --analysis_dir=$(DEMO)/analysis \
	  --length_source_file=$(DEMO_TEST).src.conllu --length_references=$(DEMO_TEST).ref.txt \
	  --length_baseline=$(DEMO)/transformer/test.hyp --length_system=$(DEMO)/dep_parse/test.hyp

clean-demo:
	rm -rf "$(DEMO)"

# A GPU session (issue 33; README, "Training on JAX and on a GPU"). The GPU
# machines have Python 3.12 and JAX with CUDA but no Keras and no TensorFlow:
# `make gpu-wheels` (here, with network and TensorFlow) downloads the wheels
# they lack into $(GPU_WHEELS) and writes the benchmark's batches there (the
# synthetic problem's datagen needs TensorFlow); carry that folder, then
# `make gpu-session GPU_DATA=... OUT=...` there runs docs/gpu_session.sh (8 minutes).
GPU_WHEELS ?= gpu_wheels
GPU_PYTHON_VERSION ?= 3.12
# optree's cp312 wheels need glibc 2.28 (manylinux_2_28); the others take 2.17.
GPU_PLATFORMS ?= --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	--platform manylinux_2_28_x86_64
# Keras's own dependencies that JAX does not bring, and the project's pure-Python ones.
GPU_WHEEL_PACKAGES := keras==3.15.1 "namex>=0.1" "optree>=0.13" "google-crc32c>=1.5" "rich>=13" \
	markdown-it-py mdurl pygments packaging "conllu>=5,<7" "ufal.chu_liu_edmonds>=1.0.3,<2"
GPU_BENCH_FLAGS ?= --hparams_set=transformer_base --batch_tokens=4096 --decode_sentences=64
GPU_DATA ?= /work/m30k/data_cs_core
OUT ?= gpu_session_out

gpu-wheels: install
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version $(GPU_PYTHON_VERSION) \
	  $(GPU_PLATFORMS) --implementation cp -d $(GPU_WHEELS) $(GPU_WHEEL_PACKAGES)
	$(PY) bin/bench $(GPU_BENCH_FLAGS) --batch_only --save_batch=$(GPU_WHEELS)/bench_batch.npz

gpu-session:
	bash docs/gpu_session.sh $(OUT) $(GPU_DATA) $(GPU_WHEELS)

# Issue 32's confirmatory grid on a GPU: `make gpu-wheels gpu-grid-bundle` here (the
# experiment's data, test files and parses, made with the parser, into
# $(GPU_WHEELS)/bundle), carry $(GPU_WHEELS), then `make gpu-grid OUT=...` there
# (docs/gpu_grid.sh: the grid's tasks side by side within the session; unpack the
# archive.tar.gz that comes back over docs/runs/$(GRID_EXPERIMENT) and commit it).
GRID_EXPERIMENT ?= multi30k_cs_en_confirmatory
GRID_TMP ?= /work/m30k/tmp
GRID_TREEBANK ?= ../shared/data/pud

gpu-grid-bundle: install
	rm -rf $(GPU_WHEELS)/bundle
	$(PY) bin/grid --experiment=$(GRID_EXPERIMENT) --data_dir=$(GPU_DATA) --tmp_dir=$(GRID_TMP) \
	  --treebank_dir=$(GRID_TREEBANK) --bundle_dir=$(GPU_WHEELS)/bundle

gpu-grid:
	EXPERIMENT=$(GRID_EXPERIMENT) bash docs/gpu_grid.sh $(OUT) $(GPU_WHEELS)/bundle $(GPU_WHEELS)
