# Shared by the scripts that build pinned programs from the Go module proxy into the cache outside
# the repository (build-controlplane, build-dataplane, build-externaldns, build-traefik). Sourced,
# never run: it is not a make target. They set root, the repository's root, and log.

cache=${KUBE_FIP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-fip-operator}

# pinned prints the version go.mod file $1 requires of module $2 ("require <module> <version>" or
# "<module> <version>" inside a require block).
pinned() { awk -v m="$2" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"; }

# cache_key hashes the Go version and every file given, so a changed pin builds anew.
cache_key() { { go version; cat "$@"; } | sha256sum | cut -c1-16; }

# heartbeat keeps a long, quiet compile visibly alive.
heartbeat() {
    local what=$1 start=$SECONDS
    while sleep 30; do log "still building $what ($((SECONDS - start))s)"; done
}

# The pinned programs are linked without DWARF (-s, and -w where named), so they are compiled
# without it too. From empty caches etcd's server built in 78 s instead of 91 s. Over a whole first
# run most builds took 3-23% less (go vet's 555 s became 513 s), though kube-apiserver took 551 s
# against 450 s: the spread between runs on this machine is as large as the gain.
nodwarf=-gcflags=all=-dwarf=false

# build_tool WHAT DIR PKG LDFLAGS OUT: builds package PKG (or several, space-separated, into the
# directory OUT/) as the module in DIR pins it, into OUT.
build_tool() {
    local what=$1 dir=$2 pkg=$3 ldflags=$4 out=$5
    log "building $what from the Go module proxy (this takes minutes on 2 cores)"
    heartbeat "$what" &
    local hb=$!
    local start=$SECONDS
    if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath "$nodwarf" -ldflags "$ldflags" -o "$out" $pkg); then
        kill "$hb" 2>/dev/null || true
        log "building $what failed"
        return 1
    fi
    kill "$hb" 2>/dev/null || true
    wait "$hb" 2>/dev/null || true
    log "built $what in $((SECONDS - start))s"
}

# upstream_copy DIR MODULE DEST: copies MODULE, at the version DIR/go.mod pins, as the Go module
# proxy serves it and checked against DIR/go.sum, to DEST, writable, for scripts/trim to cut down.
upstream_copy() {
    local dir=$1 module=$2 dest=$3 mod
    mod=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$module" | awk -F'"' '$2 == "Dir" { print $4 }')
    if [ -z "$mod" ] || [ ! -d "$mod" ]; then
        log "cannot download $module"
        return 1
    fi
    cp -R "$mod" "$dest"
    chmod -R u+w "$dest"
}

# trim ARGS...: runs scripts/trim (see there) on a file of an upstream_copy.
trim() { (cd "$root" && go run ./scripts/trim "$@"); }

# go_tool NAME PKG VERSION: prints the path of program NAME, package PKG installed at VERSION from
# the Go module proxy into $cache/tools/NAME-VERSION/. Built once with the Go toolchain go.mod
# selects (run from the repository root) and reused; a binary built by another Go version is built
# anew, as analysers refuse code newer than their own Go. Progress goes to stderr through log.
go_tool() {
    local name=$1 pkg=$2 version=$3
    local dir=$cache/tools/$name-$version
    local bin=$dir/$name
    local want
    want=$(go env GOVERSION)
    if [ -x "$bin" ] && [ "$(go version "$bin" 2>/dev/null | awk '{print $2}')" = "$want" ]; then
        echo "$bin"
        return 0
    fi
    mkdir -p "$cache/tools"
    local tmp
    tmp=$(mktemp -d "$cache/tools/.build-$name-XXXXXX")
    chmod 755 "$tmp"
    log "building $name $version with $want from the Go module proxy into $dir (this takes minutes on 2 cores)"
    heartbeat "$name" &
    local hb=$! start=$SECONDS
    if ! (cd "$tmp" && GOTOOLCHAIN=$want CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath "$nodwarf" -ldflags=-s "$pkg@$version") >&2; then
        kill "$hb" 2>/dev/null || true
        rm -rf "$tmp"
        log "building $name $version failed"
        return 1
    fi
    kill "$hb" 2>/dev/null || true
    wait "$hb" 2>/dev/null || true
    rm -rf "$dir"
    mv "$tmp" "$dir"
    log "built $name $version in $((SECONDS - start))s"
    echo "$bin"
}

# A check that is deterministic in its inputs (go generate, deadcode) is run once per set of
# inputs: inputs_key hashes the Go toolchain and the content of the files named on stdin, one per
# line; a pass is remembered under $cache/passed/NAME-KEY, and check_passed says whether one was.
# KUBE_FIP_RECHECK=1 runs every check anyway.
inputs_key() { { go version; sort -u | while IFS= read -r f; do [ -f "$f" ] && sha256sum "$f"; done; } | sha256sum | cut -c1-32; }
check_passed() { [ "${KUBE_FIP_RECHECK:-}" != 1 ] && [ -e "$cache/passed/$1-$2" ]; }
remember_pass() { mkdir -p "$cache/passed" && touch "$cache/passed/$1-$2"; }
