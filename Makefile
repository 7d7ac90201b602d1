# mtaplugin: two commands on a fresh Debian machine, as root.
#   make demo   a private Postfix on 127.0.0.1, the milter, the API and the worker on SQLite,
#               with a demo list; prints how to post and where the copies land.
#   make test   the whole suite, on SQLite and on a PostgreSQL server it starts itself.
#   make deb    the Debian package, dist/mtaplugin_VERSION_ARCH.deb (docs/package.md).
# Other targets: make test-faults, make test-fuzz, make bench, make bench-all, make bench-exim, make lint,
# make clean.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
APT_PACKAGES      := python3 postfix postfix-sqlite postfix-pgsql libmilter-dev gcc python3-dev swaks sqlite3
APT_TEST_PACKAGES := postgresql chromium

.PHONY: demo test test-faults test-fuzz deb bench bench-all bench-exim lint clean system-deps system-test-deps venv

# Installs the Debian packages that are missing.  Postfix is installed with debconf's
# "No configuration": the system instance stays unconfigured and stopped; mtaplugin's tests
# and demo run private instances with their own config (postfix -c DIR).
system-deps:
	@missing=""; for p in $(APT_PACKAGES) $(EXTRA_APT); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo ">>> apt-get install$$missing"; \
	  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections; \
	  apt-get update -q >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || exit 1; \
	fi

system-test-deps:
	@$(MAKE) --no-print-directory system-deps EXTRA_APT="$(APT_TEST_PACKAGES)"

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: system-deps venv
	$(PY) -m mtaplugin.demo

test: system-test-deps venv
	$(VENV)/bin/ruff check mtaplugin tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The fault suite alone, each randomised fault repeated 20 times (make test runs it twice);
# prints the fault table (docs/reliability.md).
test-faults: system-test-deps venv
	MTAPLUGIN_FAULT_RUNS=$${MTAPLUGIN_FAULT_RUNS:-20} $(VENV)/bin/pytest -q -p no:cacheprovider tests/faults $(PYTEST_ARGS)

# Hostile input at length: hypothesis's long profile and many more schemathesis examples
# per REST route (make test runs the same tests with few examples).
test-fuzz: system-test-deps venv
	HYPOTHESIS_PROFILE=long MTAPLUGIN_SCHEMATHESIS_EXAMPLES=$${MTAPLUGIN_SCHEMATHESIS_EXAMPLES:-200} \
	  $(VENV)/bin/pytest -q -p no:cacheprovider tests/unit/test_properties_posting.py \
	  tests/unit/test_properties_transforms.py tests/unit/test_corpus_pipeline.py \
	  tests/integration/test_hostile_sockets.py tests/integration/test_api_server.py $(PYTEST_ARGS)

# Debian's python3 with the dependencies in /usr/lib/mtaplugin/venv; dpkg-deb only.
deb: system-deps venv
	packaging/deb/build.sh dist

# What attaching mtaplugin costs Postfix: non-list mail and list posts, SQLite and
# PostgreSQL, each figure the median of 5 interleaved rounds (BENCH_ARGS=--quick: a smoke run).
bench: system-deps venv
	$(PY) bench/postfix_overhead.py $(BENCH_ARGS)

# Every side-by-side comparison (bare Postfix, OpenDKIM, load, big lists, REST against
# Mailman 3, two hosts) and one table: the goals of issue 34 first, then every row, each
# figure the median of interleaved rounds with its spread; about an hour on 2 cores.
# BENCH_ARGS=--quick for a smoke run, BENCH_ARGS=--markdown for the README's table,
# BENCH_ARGS=--mailman to add GNU Mailman's runners (docs/benchmarks.md).
bench-all: system-test-deps venv
	$(PY) bench/all.py $(BENCH_ARGS)

# Posts/s to a 1000-member list through Exim (LMTP variant) / through Postfix + milter.
bench-exim: system-deps venv
	$(PY) bench/exim_vs_postfix.py

# docs/reference/ from the code's own tables (a unit test fails while it is stale).
.PHONY: docs
docs: venv
	$(PY) -m mtaplugin.docs.reference

lint: venv
	$(VENV)/bin/ruff check mtaplugin tests bench
	$(VENV)/bin/ruff format --check mtaplugin tests bench
	$(VENV)/bin/mypy

clean:
	rm -rf var/ dist/ $(VENV)
