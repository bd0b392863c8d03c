# Ferry: build, install, uninstall, test, demo.
#
#   make build                     swift build -c release, completions, man pages (as your user)
#   sudo make install              binaries, unit, default config, demo, completions, man pages
#   sudo make uninstall            removes what install put in place; keeps config and data
#   make test                      bash scripts/test.sh (the CI command)
#   make demo                      bash scripts/quickstart.sh (build, then sync the demo store)
#   make deb                       dpkg-buildpackage -us -uc -b: ../ferry_VERSION_ARCH.deb (debian/)
#
# Variables: PREFIX (default /usr/local), DESTDIR (staging root for packagers, default empty),
# SYSCONFDIR (default /etc), UNITDIR (see below).
#
# install builds first when nothing is built (as the user behind sudo, so no root-owned files
# end up in .build/). It never overwrites an existing $(SYSCONFDIR)/ferry/ferry.conf.

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BINDIR = $(PREFIX)/bin
DATADIR = $(PREFIX)/share
MAN1DIR = $(DATADIR)/man/man1
MAN5DIR = $(DATADIR)/man/man5

# systemd reads units from /usr/local/lib/systemd/system and /usr/lib/systemd/system (besides
# /etc/systemd/system), so for those prefixes the unit goes beside the binaries and
# /etc/systemd/system stays the admin's. For any other prefix (/opt/ferry, say) systemd would
# not find it there: use /etc/systemd/system.
ifneq ($(filter /usr /usr/local,$(PREFIX)),)
UNITDIR ?= $(PREFIX)/lib/systemd/system
else
UNITDIR ?= /etc/systemd/system
endif

# The user and group ferry: systemd-sysusers reads /usr/lib/sysusers.d for the distribution's
# prefix and /etc/sysusers.d for everything else (it does not search /usr/local).
ifeq ($(PREFIX),/usr)
SYSUSERSDIR ?= /usr/lib/sysusers.d
else
SYSUSERSDIR ?= /etc/sysusers.d
endif

BASH_COMPLETION_DIR = $(DATADIR)/bash-completion/completions
ZSH_COMPLETION_DIR = $(DATADIR)/zsh/site-functions
FISH_COMPLETION_DIR = $(DATADIR)/fish/vendor_completions.d

RELEASE = .build/release
GENERATED = .build/ferry-generated
DEMO_PAGES = $(wildcard etc/ferry/demo/quotes-*.json)

.PHONY: all build install uninstall test demo generated clean-generated deb

all: build

build:
	swift build -c release
	@$(MAKE) --no-print-directory generated

# Completions come from the parser definitions in the built executables; each one that cannot
# be generated is skipped with a message. The man pages ferry(1), ferryd(1) and ferry.conf(5) are
# made by scripts/manpages.py from the programs' help and the shipped ferry.conf, as the Debian
# package's are (debian/rules); when that fails (no python3, say) they are skipped with a
# message. Part of `build`, so that install (run as root) never compiles anything.
generated:
	@rm -rf $(GENERATED) && mkdir -p $(GENERATED)/man
	@for shell in bash zsh fish; do \
	  if $(RELEASE)/ferry --generate-completion-script $$shell > $(GENERATED)/ferry.$$shell 2>/dev/null \
	     && grep -q -e 'complete' -e 'compdef' $(GENERATED)/ferry.$$shell; then \
	    echo "generated $$shell completion"; \
	  else \
	    echo "skipped $$shell completion: $(RELEASE)/ferry --generate-completion-script $$shell failed"; \
	    rm -f $(GENERATED)/ferry.$$shell; \
	  fi; \
	done
	@if python3 scripts/manpages.py $(RELEASE) $(GENERATED)/man > $(GENERATED)/manpages.log 2>&1; then \
	  echo "generated man pages ferry(1), ferryd(1), ferry.conf(5)"; \
	else \
	  echo "skipped man pages: scripts/manpages.py failed (see $(GENERATED)/manpages.log)"; \
	  rm -rf $(GENERATED)/man; \
	fi

# A fresh clone builds first: as the user who ran sudo when there is one, so no root-owned
# files end up in .build/; as root only when root runs make directly.
install:
	@if ! [ -x $(RELEASE)/ferryd -a -x $(RELEASE)/ferry -a -d $(GENERATED) ]; then \
	  if [ -n "$$SUDO_USER" ] && [ "$$SUDO_USER" != root ]; then \
	    echo "nothing built yet: building as $$SUDO_USER (make build)"; \
	    sudo -u "$$SUDO_USER" -H env PATH="$$PATH" $(MAKE) --no-print-directory build || exit 1; \
	  else \
	    echo "nothing built yet: building (make build)"; \
	    $(MAKE) --no-print-directory build || exit 1; \
	  fi; \
	fi
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/ferry $(DESTDIR)$(DATADIR)/ferry/demo $(DESTDIR)$(DATADIR)/doc/ferry/examples $(DESTDIR)$(SYSUSERSDIR)
	install -m 0755 $(RELEASE)/ferryd $(RELEASE)/ferry $(DESTDIR)$(BINDIR)/
	for unit in ferryd.service ferryd@.service; do \
	  sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/ferry/|$(SYSCONFDIR)/ferry/|g' systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit && \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	install -m 0644 systemd/ferry.sysusers $(DESTDIR)$(SYSUSERSDIR)/ferry.conf
	@# The unit runs as the user ferry: make it now, unless installing into a staging root.
	@if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then systemd-sysusers $(SYSUSERSDIR)/ferry.conf && echo "user and group ferry: ok"; fi
	install -m 0644 etc/ferry/ferry.conf $(DESTDIR)$(DATADIR)/ferry/ferry.conf.default
	install -m 0644 $(DEMO_PAGES) etc/ferry/demo/generate.py $(DESTDIR)$(DATADIR)/ferry/demo/
	install -m 0644 etc/ferry/examples/*.conf $(DESTDIR)$(DATADIR)/doc/ferry/examples/
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf ]; then \
	  echo "kept existing $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf (the shipped default is $(DATADIR)/ferry/ferry.conf.default)"; \
	else \
	  install -m 0644 etc/ferry/ferry.conf $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf && \
	  echo "installed $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf"; \
	fi
	@# The default config's demo store reads file:demo/quotes-0001.json relative to the config's
	@# directory, so the pages also go beside it (unless an admin already has a demo directory).
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/ferry/demo ]; then \
	  echo "kept existing $(DESTDIR)$(SYSCONFDIR)/ferry/demo"; \
	else \
	  install -d $(DESTDIR)$(SYSCONFDIR)/ferry/demo && \
	  install -m 0644 $(DEMO_PAGES) $(DESTDIR)$(SYSCONFDIR)/ferry/demo/ && \
	  echo "installed $(DESTDIR)$(SYSCONFDIR)/ferry/demo"; \
	fi
	@if [ -f $(GENERATED)/ferry.bash ]; then install -D -m 0644 $(GENERATED)/ferry.bash $(DESTDIR)$(BASH_COMPLETION_DIR)/ferry; fi
	@if [ -f $(GENERATED)/ferry.zsh ]; then install -D -m 0644 $(GENERATED)/ferry.zsh $(DESTDIR)$(ZSH_COMPLETION_DIR)/_ferry; fi
	@if [ -f $(GENERATED)/ferry.fish ]; then install -D -m 0644 $(GENERATED)/ferry.fish $(DESTDIR)$(FISH_COMPLETION_DIR)/ferry.fish; fi
	@if [ -d $(GENERATED)/man ]; then \
	  install -d $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(MAN5DIR) && \
	  install -m 0644 $(GENERATED)/man/ferry.1 $(GENERATED)/man/ferryd.1 $(DESTDIR)$(MAN1DIR)/ && \
	  install -m 0644 $(GENERATED)/man/ferry.conf.5 $(DESTDIR)$(MAN5DIR)/ && \
	  echo "installed ferry(1), ferryd(1), ferry.conf(5) in $(DESTDIR)$(DATADIR)/man"; \
	fi
	@echo "installed. Next: systemctl daemon-reload && systemctl enable --now ferryd"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ferryd $(DESTDIR)$(BINDIR)/ferry
	rm -f $(DESTDIR)$(UNITDIR)/ferryd.service $(DESTDIR)$(UNITDIR)/ferryd@.service $(DESTDIR)$(SYSUSERSDIR)/ferry.conf
	rm -f $(DESTDIR)$(BASH_COMPLETION_DIR)/ferry $(DESTDIR)$(ZSH_COMPLETION_DIR)/_ferry $(DESTDIR)$(FISH_COMPLETION_DIR)/ferry.fish
	rm -f $(DESTDIR)$(MAN1DIR)/ferry.1 $(DESTDIR)$(MAN1DIR)/ferryd.1 $(DESTDIR)$(MAN5DIR)/ferry.conf.5
	@# Pages of older installs (one per subcommand, from swift-argument-parser's generate-manual).
	rm -f $(DESTDIR)$(MAN1DIR)/ferry-*.1 $(DESTDIR)$(MAN1DIR)/ferryd-*.1
	rm -rf $(DESTDIR)$(DATADIR)/ferry $(DESTDIR)$(DATADIR)/doc/ferry/examples
	@echo "kept $(DESTDIR)$(SYSCONFDIR)/ferry (configuration, credentials, demo pages): remove it yourself if unwanted"
	@echo "kept /var/lib/ferry (the replica databases) and the user and group ferry"
	@echo "if ferryd was running: systemctl disable --now ferryd; systemctl daemon-reload"

test:
	bash scripts/test.sh

# The Debian package, built with the Swift toolchain on PATH and debhelper (apt install
# debhelper); the .deb lands beside the checkout, as dpkg-buildpackage puts it.
deb:
	dpkg-buildpackage -us -uc -b
	@ls -1 ../ferry_*.deb

demo:
	bash scripts/quickstart.sh

clean-generated:
	rm -rf $(GENERATED)
