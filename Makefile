# Every script in scripts/ is a target run on this machine: make test, make build, make run, ...
# Prefix a target with dapper- to run it inside the build container instead (needs Docker):
# make dapper-ci.
TARGETS := $(shell find scripts -maxdepth 1 -type f -perm -u+x -printf '%f\n')

.PHONY: $(TARGETS) dapper-% default clean

default: build

$(TARGETS):
	./scripts/$@

DAPPER_VERSION ?= v0.6.0
.dapper:
	@echo "installing dapper $(DAPPER_VERSION) from the Go module proxy"
	GOBIN=$(CURDIR) go install github.com/rancher/dapper@$(DAPPER_VERSION)
	@mv dapper .dapper
	@./.dapper -v

dapper-%: .dapper
	./.dapper $*

clean:
	rm -rf bin dist .dapper
