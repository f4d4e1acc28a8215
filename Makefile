# SPDX-License-Identifier: GPL-2.0
#
# loopmq: build, install, check and benchmark.
#
#   make                  build loopmq.ko for the running kernel (or KVER=/KDIR=)
#   make modules-all      build for every installed 6.1/6.12 kernel, W=1, no warnings
#   make install          install module (extra/), depmod, tool, man pages
#                         (REPLACE_LOOP=1: also the modprobe.d file that makes
#                         loopmq the system's loop driver)
#   make check            everything: builds, style, sparse, guest tests
#   make crash            only the crash-consistency trials (tests/crash/run)
#   make bench            the fio comparison in a guest (QUICK=1 for a short run)

KVER	?= $(shell uname -r)
KDIR	?= /lib/modules/$(KVER)/build
PREFIX	?= /usr/local
DESTDIR	?=
BUILD	:= $(CURDIR)/build
DEPS	:= scripts/install-deps.sh
KERNELS	= $(shell scripts/kernels.sh | awk '{ print $$2 }')

.PHONY: all modules modules-all tools install clean style sparse check \
	check-debug crash bench deps

all: modules tools

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

deps:
	@bash $(DEPS)

# One scratch build per installed kernel; warnings fail the build.
modules-all: deps
	@set -e; for k in $(KERNELS); do \
		echo "  BUILD   loopmq.ko for $$k"; \
		scripts/build-module.sh /lib/modules/$$k/build $(BUILD)/$$k; \
	done

tools:
	$(MAKE) -C tools

install: modules tools
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install
	depmod -a $(if $(DESTDIR),-b $(DESTDIR)) $(KVER)
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
ifeq ($(REPLACE_LOOP),1)
	install -D -m 0644 docs/modprobe.d-replace-loop.conf \
		$(DESTDIR)/etc/modprobe.d/loopmq-replace-loop.conf
endif

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	-$(MAKE) -C tools clean
	rm -rf $(BUILD)

CHECKPATCH_FILES = $(wildcard *.c *.h include/uapi/*.h)
# Two justified exceptions: ENOSYS is what loop-control answers to an unknown
# command (ABI compatibility), and loopmq.h includes the uapi header that
# shares its base name (EMBEDDED_FILENAME matches on the base name).
CHECKPATCH_IGNORE = ENOSYS,EMBEDDED_FILENAME
# The uapi header's X-macro lists of names (LOOPMQ_MODES(X) ...) are a
# sequence of X(...) that calls X once per entry: checkpatch wants such a
# body in parentheses and X used once; for that file only, not for the rest.
CHECKPATCH_UAPI = include/uapi/loopmq.h
CHECKPATCH_UAPI_IGNORE = $(CHECKPATCH_IGNORE),COMPLEX_MACRO,MACRO_ARG_REUSE
CHECKPATCH = perl $$tree/scripts/checkpatch.pl --no-tree --strict --quiet
# The user-space tool, in the same style, less what only the kernel has:
# ARRAY_SIZE and __printf, and its <inttypes.h> PRIu64 macros are no
# CamelCase.  Its messages are split across source lines as util-linux's
# are (SPLIT_STRING): each is one printf, so grep finds it by its start.
CHECKPATCH_TOOLS = $(wildcard tools/*.c tools/*.h)
CHECKPATCH_TOOLS_IGNORE = ARRAY_SIZE,PREFER_DEFINED_ATTRIBUTE_MACRO,CAMELCASE,SPLIT_STRING

style: deps
	@tree=$$(scripts/linux-source.sh) && \
	$(CHECKPATCH) --ignore $(CHECKPATCH_IGNORE) \
		-f $(filter-out $(CHECKPATCH_UAPI),$(CHECKPATCH_FILES)) && \
	$(CHECKPATCH) --ignore $(CHECKPATCH_UAPI_IGNORE) -f $(CHECKPATCH_UAPI) && \
	$(CHECKPATCH) --ignore $(CHECKPATCH_TOOLS_IGNORE) -f $(CHECKPATCH_TOOLS) && \
	echo "  STYLE   checkpatch clean: $(CHECKPATCH_FILES) $(CHECKPATCH_TOOLS)"

sparse: deps
	@set -e; for k in $(KERNELS); do \
		echo "  SPARSE  loopmq.ko for $$k"; \
		scripts/build-module.sh /lib/modules/$$k/build $(BUILD)/sparse-$$k C=2; \
	done

check: deps
	@tests/check.sh

check-debug: deps
	@tests/check.sh --debug-only

crash: deps
	@tests/crash/run

bench: deps
	@bench/run $(if $(QUICK),--quick)
