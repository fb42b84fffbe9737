package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// TestBuildReleaseRefusesUnknownCommit: a commit the history does not have is refused at once,
// with the way to fetch it, and nothing is built or cached.
func TestBuildReleaseRefusesUnknownCommit(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(cacheEnv, cache)
	for _, commit := range []string{strings.Repeat("0", 40), "no-such-ref", "--help"} {
		start := time.Now()
		binary, err := BuildRelease(commit)
		if err == nil {
			t.Fatalf("BuildRelease(%q) = %s, want an error", commit, binary)
		}
		if !strings.Contains(err.Error(), "not in the history") || !strings.Contains(err.Error(), "git fetch --unshallow") {
			t.Errorf("BuildRelease(%q): %v; want it to say the commit is not in the history and to run git fetch --unshallow", commit, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("BuildRelease(%q) took %s to refuse", commit, d)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the cache has %d entries after refused builds, want none", len(entries))
	}
}

// TestBuildReleaseExportsTheCommit: the tree a release is built from is the commit's, file for
// file, without building it.
func TestBuildReleaseExportsTheCommit(t *testing.T) {
	root, err := rig.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	full, err := resolveCommit(root, "HEAD")
	if err != nil {
		t.Skipf("no git history here: %v", err)
	}
	dir := t.TempDir()
	if err := exportCommit(root, full, dir); err != nil {
		t.Fatal(err)
	}
	// One "<mode> <type> <object>\t<path>" a line.
	listed, err := git(root, "ls-tree", "-r", full)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(listed), "\n")
	for _, line := range lines {
		meta, name, _ := strings.Cut(line, "\t")
		mode := strings.Fields(meta)[0]
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s of %s was not exported: %v", name, full, err)
			continue
		}
		switch {
		case mode == "120000" && info.Mode()&os.ModeSymlink == 0:
			t.Errorf("%s: a symbolic link in the commit, exported as %s", name, info.Mode())
		case (mode == "100644" || mode == "100755") && !info.Mode().IsRegular():
			t.Errorf("%s: a file in the commit, exported as %s", name, info.Mode())
		case mode == "100755" && info.Mode().Perm()&0o100 == 0:
			t.Errorf("%s: executable in the commit, exported as %s", name, info.Mode())
		}
		if name == "go.mod" || name == "main.go" {
			want, err := exec.Command("git", "-C", root, "show", full+":"+name).Output()
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("exported %s differs from the commit's", name)
			}
		}
	}
	if len(lines) < 10 {
		t.Errorf("only %d files in %s", len(lines), full)
	}
}

// TestBuildReleaseCacheDir: the cache is where the build scripts keep theirs.
func TestBuildReleaseCacheDir(t *testing.T) {
	t.Setenv(cacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if dir, err := CacheDir(); err != nil || dir != "/xdg/kube-fip-operator" {
		t.Errorf("with XDG_CACHE_HOME: %s, %v", dir, err)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if dir, err := CacheDir(); err != nil || dir != "/home/someone/.cache/kube-fip-operator" {
		t.Errorf("with HOME only: %s, %v", dir, err)
	}
	t.Setenv(cacheEnv, "/elsewhere")
	if dir, err := CacheDir(); err != nil || dir != "/elsewhere" {
		t.Errorf("with %s: %s, %v", cacheEnv, dir, err)
	}
}
